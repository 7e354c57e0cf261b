package greeter

func Greet(name string) string {
	greeting := "hello, "
	return greting + name
}
