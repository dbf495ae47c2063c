module example.com/rot

go 1.24
