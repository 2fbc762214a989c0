package measure

import "sort"

func sortFloats(f []float64) { sort.Float64s(f) }
