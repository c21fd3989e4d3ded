// The floor under a Swift main, linked as the daemon is (bench/floor/reader.c says what it does):
// the Swift runtime and standard library with nothing of the daemon's on top.
import Glibc

@_silgen_name("floor_serve") func floorServe() -> Int32

exit(floorServe())
