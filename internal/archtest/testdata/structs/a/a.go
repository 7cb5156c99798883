package a

// big has four fields: three on one line and one embedded.
type big struct {
	x, y, z int
	small
}

type small struct{ a, b int }

func f() {
	type inner struct {
		a, b, c, d int
		e          string
	}
}
