package topo

// DecodeCustomResultForTest exposes the custom-topology result decoder and
// builder to the external fuzz tests.
func DecodeCustomResultForTest(data []byte) (*Topo, error) {
	res, err := decodeCustomResult(data)
	if err != nil {
		return nil, err
	}
	t, _, err := res.build()
	return t, err
}
