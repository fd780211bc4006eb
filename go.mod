module github.com/ggufkit/ggufkit

go 1.26.8
