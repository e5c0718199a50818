# termgate in a minimal image: the static release binary (libseccomp linked
# in) on Debian's slim base, with bash for sessions to run.
#
#   docker build -t termgate .
#   docker run -i --rm termgate serve        # MCP over stdio
#
# Sessions are confined with Landlock and seccomp user notification: the
# container needs a kernel with Landlock (ABI 6 or later), and a seccomp
# profile that lets termgate install its own filters (seccomp(2) with user
# notification). Run `docker run --rm termgate sandbox check` to see what the
# container can enforce; termgate refuses sessions it cannot confine.
# Add the programs agents should drive (python3, git, psql, …) to the
# final stage.

FROM golang:1.26-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libseccomp-dev pkg-config \
	&& rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -buildvcs=false -tags netgo,osusergo \
	-ldflags "-s -w -buildid= -linkmode external -extldflags '-static -Wl,--build-id=none'" \
	-o /out/termgate ./cmd/termgate

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends bash ca-certificates \
	&& rm -rf /var/lib/apt/lists/* \
	&& useradd --create-home --uid 10001 termgate
COPY --from=build /out/termgate /usr/local/bin/termgate
USER termgate
WORKDIR /home/termgate
ENTRYPOINT ["/usr/local/bin/termgate"]
CMD ["serve"]
