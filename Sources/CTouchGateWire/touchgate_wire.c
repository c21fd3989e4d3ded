/* Empty: SwiftPM needs one source file to export touchgate_wire.h to Swift. */
