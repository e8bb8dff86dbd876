// A module of its own: the tests build it with every Go this machine can
// get (Debian's 1.19 among them), which weft's go.mod would refuse.
module goasync

go 1.19
