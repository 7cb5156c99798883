package fine

// three is at the bound.
type three struct {
	a int
	b string
	small
}

type small struct{}
