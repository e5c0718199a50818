# Thin wrappers over scripts/dev, for those who type make.
.PHONY: demo test bench deps
demo test bench deps:
	scripts/dev $@
