package emulator

import "time"

// Options build configurations in tests; programs set Config's fields
// (or use package linkparams, or the text grammar).

// Option changes one setting; Build applies options to DefaultConfig.
type Option func(*Config)

// Build applies options to DefaultConfig and validates the result.
func Build(opts ...Option) (Config, error) {
	c := DefaultConfig()
	for _, o := range opts {
		o(&c)
	}
	return c, c.Validate()
}

func Delay(d time.Duration) Option           { return func(c *Config) { c.Delay = d } }
func Jitter(d time.Duration) Option          { return func(c *Config) { c.Jitter = d } }
func WithDistribution(d Distribution) Option { return func(c *Config) { c.Distribution = d } }
func HalfLife(d time.Duration) Option        { return func(c *Config) { c.HalfLife = d } }
func RateInterval(d time.Duration) Option    { return func(c *Config) { c.RateInterval = d } }
func TimeBasedWeight(on bool) Option         { return func(c *Config) { c.TimeBasedWeight = on } }
func Reorder(on bool) Option                 { return func(c *Config) { c.Reorder = on } }
func Overhead(bytes int) Option              { return func(c *Config) { c.Overhead = bytes } }
func MaxFrame(bytes int) Option              { return func(c *Config) { c.MaxFrame = bytes } }
func BufferPackets(n int) Option             { return func(c *Config) { c.Buffer = n } }
func Seed(s uint64) Option                   { return func(c *Config) { c.Seed, c.SeedSet = s, true } }
func AllowLarge(on bool) Option              { return func(c *Config) { c.AllowLarge = on } }
func RandomLossProb(p float64) Option {
	return func(c *Config) { c.Loss = LossConfig{Model: RandomLoss, Prob: p} }
}
func Police(rateBits, burstBytes uint64) Option {
	return func(c *Config) { c.Police = PolicerConfig{true, rateBits, burstBytes} }
}
func Space(rateBits, limitBytes uint64) Option {
	return func(c *Config) { c.Space = SpacerConfig{true, rateBits, limitBytes} }
}
func GilbertElliottLoss(p, r, oneMinusH, oneMinusK float64) Option {
	return func(c *Config) {
		c.Loss = LossConfig{Model: GilbertElliott, P: p, R: r, OneMinusH: oneMinusH, OneMinusK: oneMinusK}
	}
}
