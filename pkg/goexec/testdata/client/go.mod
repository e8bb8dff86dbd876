// A module of its own, so that every Go this machine can get builds it.
module client

go 1.18
