package greeter

const greeting = "hello, "

func Greet(name string) string {
	return greting + name
}
