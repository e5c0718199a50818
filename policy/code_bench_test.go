package policy

import (
	"testing"
)

// BenchmarkAnalyse measures the analysis alone (no policy evaluation), per
// language, over the corpus's inputs of that language.
func BenchmarkAnalyse(b *testing.B) {
	for _, lang := range []string{"python", "javascript", "sql", "perl"} {
		var inputs []Input
		for _, c := range loadCodeCorpus(b) {
			if codeLanguage(c.program) == lang || lang == "sql" && sqlDialect(c.program) != "" ||
				lang == "perl" && c.program == "bash" {
				inputs = append(inputs, Input{Action: "input", Program: c.program, Text: c.text})
			}
		}
		b.Run(lang, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				in := inputs[i%len(inputs)]
				in.Prepare()
			}
		})
	}
}
