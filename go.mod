module github.com/hymn-net/hymn

go 1.26
