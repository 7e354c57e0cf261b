package shapes

func Area(r float64) float64 { return math.Pi * r * r }
