module example.com/mixer

go 1.26
