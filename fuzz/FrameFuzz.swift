// libFuzzer harness for the Swift frame decoder: Frame.decode and FrameReader on any bytes.
import TouchGateWire

/// Stops the run with a message; libFuzzer keeps the input that got here as the reproducer.
private func violated(_ what: String, _ input: [UInt8]) -> Never {
    fatalError("frame harness: \(what) (input \(input.count) bytes)")
}

private func be32(_ b: [UInt8], _ i: Int) -> Int {
    Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3])
}

/// One whole frame: a frame the decoder accepts re-encodes to the very same bytes, and those
/// decode to the same frame; an encoder and a decoder that disagree would let a peer smuggle
/// a frame one side reads differently from the other.
private func checkRoundTrip(_ bytes: [UInt8]) -> Frame? {
    let frame: Frame
    do { frame = try Frame.decode(bytes) } catch { return nil }
    let again: [UInt8]
    do { again = try frame.encoded() } catch { violated("a decoded frame does not encode: \(error)", bytes) }
    guard again == bytes else { violated("re-encoding gives other bytes", bytes) }
    do {
        guard try Frame.decode(again) == frame else { violated("decode(encode(frame)) is another frame", bytes) }
    } catch {
        violated("a re-encoded frame does not decode: \(error)", bytes)
    }
    return frame
}

/// Everything a reader yields: its frames, then the error that stopped it (if any).
private struct Drained: Equatable {
    var frames: [Frame] = []
    var error: WireError?
    var bytesWanted = 0
}

private func drain(_ reader: inout FrameReader, into out: inout Drained) {
    while out.error == nil {
        do {
            guard let frame = try reader.next() else { break }
            out.frames.append(frame)
        } catch {
            out.error = error
        }
    }
}

/// The stream: the same bytes given to FrameReader at once and in small pieces must give the same
/// frames and the same error, and each frame must be what Frame.decode makes of its own bytes.
private func checkStream(_ bytes: [UInt8]) -> Drained {
    var whole = Drained()
    var reader = FrameReader()
    reader.append(bytes)
    drain(&reader, into: &whole)
    if whole.error == nil {
        whole.bytesWanted = reader.bytesWanted
        guard whole.bytesWanted >= 1 else { violated("a waiting reader wants 0 bytes", bytes) }
    }

    // Piece sizes from a fixed generator seeded by the length, so a reproducer replays exactly.
    var pieces = Drained()
    var chunked = FrameReader()
    var seed = UInt32(truncatingIfNeeded: bytes.count) &* 2_654_435_761 | 1
    var offset = 0
    while offset < bytes.count && pieces.error == nil {
        seed = seed &* 1_103_515_245 &+ 12_345
        let n = min(bytes.count - offset, 1 + Int(seed >> 16) % 97)
        chunked.append(bytes[offset..<(offset + n)])
        offset += n
        drain(&chunked, into: &pieces)
    }
    if pieces.error == nil { pieces.bytesWanted = chunked.bytesWanted }
    guard pieces == whole else { violated("reading in pieces differs from reading at once", bytes) }

    var at = 0
    for frame in whole.frames {
        let end = at + 4 + be32(bytes, at)
        guard let alone = checkRoundTrip(Array(bytes[at..<end])), alone == frame else {
            violated("the reader's frame is not Frame.decode of its bytes", bytes)
        }
        at = end
    }
    return whole
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrame(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    let frame = checkRoundTrip(bytes)
    let stream = checkStream(bytes)
    // One whole frame is also exactly one frame of the stream, with nothing left over.
    if let frame, stream.frames != [frame] || stream.error != nil || stream.bytesWanted != 4 {
        violated("Frame.decode and FrameReader disagree", bytes)
    }
    return 0
}
