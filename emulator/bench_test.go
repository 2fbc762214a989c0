package emulator

import "testing"

// BenchmarkEngine reports ns and allocations per packet (one op = one
// packet through Receive and Release) for each scenario of issue 3.
func BenchmarkEngine(b *testing.B) {
	for _, s := range BenchScenarios() {
		b.Run(s.Name, func(b *testing.B) {
			r, err := s.NewRunner()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			r.Run(b.N)
			b.StopTimer()
			b.ReportMetric(float64(r.Queued()), "queued")
		})
	}
}
