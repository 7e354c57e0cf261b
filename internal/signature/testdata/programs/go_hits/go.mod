module example.com/hits

go 1.26
