module example.com/graph

go 1.26
