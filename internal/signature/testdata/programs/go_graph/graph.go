package graph

type Graph struct {
	edges map[string][]string
}

func New() *Graph { return &Graph{} }

func (g *Graph) Link(a, b string) {
	g.edges[a] = append(g.edges[a], b)
}
