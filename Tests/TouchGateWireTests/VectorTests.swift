// The Swift codec against the golden vectors shared with the C codec (Tests/Vectors).
import Foundation
import Testing
@testable import TouchGateWire

private let vectorsDir = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Vectors")

private func vector(_ name: String) throws -> [UInt8] {
    let hex = try String(contentsOf: vectorsDir.appendingPathComponent("\(name).hex"), encoding: .utf8)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    var out: [UInt8] = []
    var i = hex.startIndex
    while i < hex.endIndex {
        let j = hex.index(i, offsetBy: 2)
        out.append(UInt8(hex[i..<j], radix: 16)!)
        i = j
    }
    return out
}

private let goodVectors: [(String, Frame)] = [
    (
        "evaluate_request",
        Frame(
            .evaluate, requestID: 0x0102_0304,
            [
                Field(.user, "alice"), Field(.policy, 1), Field(.service, "sudo"), Field(.maxTries, 3),
                Field(.timeout, 30), Field(.locale, "en_US.UTF-8"), Field(.tty, "/dev/pts/1"),
            ])
    ),
    (
        "can_evaluate_request",
        Frame(
            .canEvaluate, requestID: 1,
            [
                Field(.user, "bob"), Field(.policy, 2), Field(.service, "login"),
            ])
    ),
    ("cancel_request", Frame(.cancel, requestID: 0x0102_0304)),
    (
        "result_success",
        Frame(
            .result, requestID: 0x0102_0304,
            [
                Field(.code, 0), Field(.message, "Fingerprint recognised"),
            ])
    ),
    (
        "result_max_tries",
        Frame(
            .result, requestID: 9,
            [
                Field(.code, -1), Field(.message, "Fingerprint not recognised after 3 tries"),
            ])
    ),
    (
        "result_backoff",
        Frame(
            .result, requestID: 10,
            [
                Field(.code, -12), Field(.reason, "backoff"), Field(.seconds, 60),
                Field(.message, "Too many wrong passwords: try again in 60 seconds"),
            ])
    ),
    (
        "result_list",
        Frame(
            .result, requestID: 11,
            [
                Field(.code, 0), Field(.finger, "left-index-finger"), Field(.finger, "right-thumb"),
            ])
    ),
    (
        "progress_retry",
        Frame(
            .progress, requestID: 0x0102_0304,
            [
                Field(.progress, 2), Field(.style, 1), Field(.message, "Swipe was too short, try again"),
            ])
    ),
    (
        "progress_prompt_zh",
        Frame(
            .progress, requestID: 0xFFFF_FFFF,
            [
                Field(.progress, 1), Field(.style, 1), Field(.message, "请将手指放在指纹识别器上"),
            ])
    ),
    (
        "progress_enroll_stage",
        Frame(
            .progress, requestID: 5,
            [
                Field(.progress, 5), Field(.stage, 2), Field(.stages, 5),
            ])
    ),
    ("progress_keepalive", Frame(.progress, requestID: 5, [Field(.progress, 6)])),
    (
        "progress_prompt_accepts_password",
        Frame(
            .progress, requestID: 12,
            [
                Field(.progress, 1), Field(.style, 1), Field(.message, "Place your finger on the fingerprint reader"),
                Field(.flags, WireLimits.flagAcceptsPassword),
            ])
    ),
    (
        "result_password_accepted",
        Frame(
            .result, requestID: 12,
            [
                Field(.code, 0), Field(.reason, Reason.password.rawValue), Field(.flags, WireLimits.flagByPassword),
                Field(.message, "Password accepted"),
            ])
    ),
]

private let badVectors: [(String, WireError)] = [
    ("bad_version", .badVersion(2)),
    ("bad_flags", .badFlags(1)),
    ("bad_zero_request_id", .zeroRequestID),
    ("bad_unknown_kind", .unknownKind(0x7F)),
    ("bad_unknown_tag", .unknownTag(99)),
    ("bad_tag_zero", .unknownTag(0)),
    ("bad_int_size", .badIntSize(.code, 2)),
    ("bad_string_nul", .stringHasNUL(.message)),
    ("bad_duplicate_tag", .duplicateTag(.code)),
    ("bad_truncated_field", .truncated),
    ("bad_field_overruns", .truncated),
    ("bad_length_too_small", .badLength(7)),
    ("bad_length_too_large", .badLength(8193)),
    ("bad_string_too_long", .stringTooLong(.message)),
    ("bad_invalid_utf8", .invalidUTF8(.message)),
]

@Suite struct GoldenVectors {
    @Test(arguments: goodVectors.map(\.0))
    func decodesToTheDocumentedFrame(name: String) throws {
        let expected = goodVectors.first { $0.0 == name }!.1
        #expect(try Frame.decode(vector(name)) == expected)
    }

    @Test(arguments: goodVectors.map(\.0))
    func encodesToTheSameBytes(name: String) throws {
        let frame = goodVectors.first { $0.0 == name }!.1
        #expect(try frame.encoded() == vector(name))
    }

    @Test(arguments: badVectors.map(\.0))
    func rejectsMalformedFrame(name: String) throws {
        let expected = badVectors.first { $0.0 == name }!.1
        #expect(throws: expected) { try Frame.decode(vector(name)) }
    }

    @Test func everyVectorFileIsCovered() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: vectorsDir.path)
            .filter { $0.hasSuffix(".hex") }.map { String($0.dropLast(4)) }
        #expect(Set(files) == Set(goodVectors.map(\.0) + badVectors.map(\.0)))
    }
}

@Suite struct StreamDecoding {
    @Test func yieldsFramesSplitAcrossReadsInOrder() throws {
        let a = try vector("progress_retry"), b = try vector("result_success")
        var reader = FrameReader()
        var frames: [Frame] = []
        for byte in a + b {
            reader.append([byte])
            if let f = try reader.next() { frames.append(f) }
        }
        #expect(frames.map(\.kind) == [.progress, .result])
        #expect(reader.bytesWanted == 4)
    }

    @Test func rejectsAnOversizedLengthBeforeTheBodyArrives() {
        var reader = FrameReader()
        reader.append([0, 0, 0x20, 0x01])  // 8193
        #expect(throws: WireError.badLength(8193)) { try reader.next() }
    }

    @Test func aDocumentLongerThanOneFieldTravelsInPiecesJoinedInOrder() throws {
        // Three bytes a character: no piece may end inside one.
        let document = "{\"detail\":\"" + String(repeating: "指纹", count: 600) + "\"}"
        let pieces = Frame.pieces(document)
        #expect(pieces.count == 4 && pieces.allSatisfy { $0.utf8.count <= WireLimits.maxString })
        let frame = Frame(.result, requestID: 9, [Field(.code, 0)] + pieces.map { Field(.json, $0) })
        let decoded = try Frame.decode(try frame.encoded())
        #expect(decoded.joined(.json) == document)
        #expect(Frame(.result, requestID: 9, [Field(.code, 0)]).joined(.json) == nil)
        #expect(Frame.pieces("") == [""])
        // One character of 1 + 700 scalars (1,401 bytes) is split between scalars, not sent whole.
        let heavy = "e" + String(repeating: "\u{301}", count: 700)
        #expect(heavy.count == 1 && Frame.pieces(heavy).allSatisfy { $0.utf8.count <= WireLimits.maxString })
        #expect(Frame.pieces(heavy).joined() == heavy)
    }

    @Test func encoderRefusesWhatTheDecoderWouldReject() {
        #expect(throws: WireError.zeroRequestID) { try Frame(.result, requestID: 0).encoded() }
        #expect(throws: WireError.duplicateTag(.code)) {
            try Frame(.result, requestID: 1, [Field(.code, 0), Field(.code, 1)]).encoded()
        }
        #expect(throws: WireError.wrongType(.user)) { try Frame(.list, requestID: 1, [Field(.user, 5)]).encoded() }
        #expect(throws: WireError.stringTooLong(.message)) {
            try Frame(.result, requestID: 1, [Field(.message, String(repeating: "x", count: 1025))]).encoded()
        }
        #expect(throws: WireError.stringHasNUL(.user)) {
            try Frame(.list, requestID: 1, [Field(.user, "a\0b")]).encoded()
        }
    }

    @Test func allowsRepeatedListTags() throws {
        let f = Frame(.result, requestID: 3, [Field(.code, 0), Field(.device, "a"), Field(.device, "b")])
        #expect(try Frame.decode(f.encoded()).strings(.device) == ["a", "b"])
    }
}

@Suite struct HeaderAgreement {
    @Test func outcomeNumbersMatchTheCHeader() {
        for outcome in Outcome.allCases { #expect(headerOutcomeCodes[outcome] == outcome.rawValue, "\(outcome)") }
        #expect(headerOutcomeCodes.count == Outcome.allCases.count)
    }

    @Test func fingerNamesFollowLibfprintOrder() {
        #expect(Finger(fpFinger: 1) == .leftThumb)
        #expect(Finger(fpFinger: 10) == .rightLittle)
        #expect(Finger(fpFinger: 0) == nil)
        #expect(Finger.rightIndex.fpFinger == 7)
    }
}
