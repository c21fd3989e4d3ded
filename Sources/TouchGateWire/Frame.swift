// Frames of the touchgate wire protocol: types, encoding and bounded decoding (layout in touchgate_wire.h).
import CTouchGateWire

public enum WireLimits {
    public static let version = UInt8(TG_PROTOCOL_VERSION)
    public static let lengthSize = Int(TG_LENGTH_SIZE)
    public static let headerRest = Int(TG_HEADER_REST)
    public static let maxFrame = Int(TG_MAX_FRAME)
    public static let maxString = Int(TG_MAX_STRING)
    public static let maxFields = Int(TG_MAX_FIELDS)
    public static let keepaliveMilliseconds = Int(TG_KEEPALIVE_MS)
    public static let silenceDeadlineMilliseconds = Int(TG_SILENCE_DEADLINE_MS)
    public static let replyDeadlineMilliseconds = Int(TG_REPLY_DEADLINE_MS)
    public static let maxTriesLimit = Int(TG_MAX_TRIES_LIMIT)
    public static let timeoutLimit = Int(TG_TIMEOUT_LIMIT)
    public static let unsolicitedRequestID = UInt32(TG_UNSOLICITED_ID)

    /// Whether `frame` answers the request `id`: its own id, or the unsolicited id on the daemon's
    /// refusal of a request it never read (touchgate_wire.h's `tg_unsolicited_refusal`, the rule
    /// the C module follows too).
    public static func answers(_ frame: Frame, request id: UInt32) -> Bool {
        guard frame.requestID == unsolicitedRequestID else { return frame.requestID == id }
        let code = frame.int(.code)
        return tg_unsolicited_refusal(Int32(frame.kind.rawValue), code == nil ? 0 : 1, code ?? 0) != 0
    }
    /// EVALUATE's FLAGS: the client takes no input (GDM style).
    public static let flagNoInput = Int32(TG_FLAG_NO_INPUT)
    /// A RESULT's FLAGS: ask for the password now and send it in VERIFY_PASSWORD.
    public static let flagAskPassword = Int32(TG_FLAG_ASK_PASSWORD)
    /// EVALUATE's FLAGS: the client reads no keys at the prompt (it may still ask a password after it).
    public static let flagNoTerminal = Int32(TG_FLAG_NO_TERMINAL)
    /// A prompt's PROGRESS FLAGS: a password typed at it may be sent in PASSWORD; the daemon checks it.
    public static let flagAcceptsPassword = Int32(TG_FLAG_ACCEPTS_PASSWORD)
    /// A RESULT's FLAGS: the answer judges a password the daemon checked.
    public static let flagByPassword = Int32(TG_FLAG_BY_PASSWORD)
    /// EVALUATE's FLAGS: release the sealed login password after a match (root, keyring_services).
    public static let flagWantAuthtok = Int32(TG_FLAG_WANT_AUTHTOK)
}

public enum Kind: UInt8, Sendable, CaseIterable {
    case canEvaluate = 0x01, evaluate = 0x02, cancel = 0x03, enroll = 0x04, list = 0x05
    case delete = 0x06, devices = 0x07, status = 0x08, enable = 0x09, disable = 0x0A
    case lock = 0x0B, reset = 0x0C, domainState = 0x0D, monitor = 0x0E, password = 0x0F
    case passwordSuccess = 0x10, verifyPassword = 0x11, keyringEnable = 0x12, keyringDisable = 0x13
    case keyringRenew = 0x14
    case result = 0x40, progress = 0x41, event = 0x42

    public var isRequest: Bool { rawValue < 0x40 }
}

public enum Tag: UInt16, Sendable, CaseIterable {
    case user = 1, policy, service, maxTries, timeout, locale, tty, rhost, finger, all, code
    case message, style, progress, stage, stages, device, reason, seconds, flags, password
    case domainState, json

    public enum ValueType: Sendable { case int, string }

    public var valueType: ValueType {
        switch self {
        case .policy, .maxTries, .timeout, .all, .code, .style, .progress, .stage, .stages,
            .seconds, .flags:
            return .int
        default:
            return .string
        }
    }

    /// Tags that may repeat in one frame (lists in a RESULT; a JSON document in pieces).
    public var isRepeatable: Bool { self == .finger || self == .device || self == .json }
}

public enum FieldValue: Equatable, Sendable {
    case int(Int32)
    case string(String)
}

public struct Field: Equatable, Sendable {
    public var tag: Tag
    public var value: FieldValue
    public init(_ tag: Tag, _ value: Int32) { self.tag = tag; self.value = .int(value) }
    public init(_ tag: Tag, _ value: String) { self.tag = tag; self.value = .string(value) }
}

public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    case badLength(Int)
    case truncated
    case badVersion(UInt8)
    case badFlags(UInt16)
    case zeroRequestID
    case unknownKind(UInt8)
    case unknownTag(UInt16)
    case badIntSize(Tag, Int)
    case stringTooLong(Tag)
    case stringHasNUL(Tag)
    case invalidUTF8(Tag)
    case duplicateTag(Tag)
    case tooManyFields
    case missingField(Tag)
    case wrongType(Tag)

    public var description: String {
        switch self {
        case .badLength(let n): return "frame length \(n) out of range"
        case .truncated: return "frame truncated"
        case .badVersion(let v): return "unsupported protocol version \(v)"
        case .badFlags(let f): return "reserved flags set (\(f))"
        case .zeroRequestID: return "request id 0"
        case .unknownKind(let k): return "unknown message kind \(k)"
        case .unknownTag(let t): return "unknown field tag \(t)"
        case .badIntSize(let t, let n): return "integer field \(t) has \(n) bytes"
        case .stringTooLong(let t): return "string field \(t) too long"
        case .stringHasNUL(let t): return "string field \(t) contains NUL"
        case .invalidUTF8(let t): return "string field \(t) is not UTF-8"
        case .duplicateTag(let t): return "field \(t) repeated"
        case .tooManyFields: return "too many fields"
        case .missingField(let t): return "missing field \(t)"
        case .wrongType(let t): return "field \(t) has the wrong type"
        }
    }
}

public struct Frame: Equatable, Sendable {
    public var kind: Kind
    public var requestID: UInt32
    public var fields: [Field]

    public init(_ kind: Kind, requestID: UInt32, _ fields: [Field] = []) {
        self.kind = kind
        self.requestID = requestID
        self.fields = fields
    }

    // MARK: field access

    public func int(_ tag: Tag) -> Int32? {
        for f in fields where f.tag == tag { if case .int(let v) = f.value { return v } }
        return nil
    }

    public func string(_ tag: Tag) -> String? {
        for f in fields where f.tag == tag { if case .string(let v) = f.value { return v } }
        return nil
    }

    public func strings(_ tag: Tag) -> [String] {
        fields.compactMap { f in
            guard f.tag == tag, case .string(let v) = f.value else { return nil }
            return v
        }
    }

    /// The pieces of a text sent in several fields of `tag` (a JSON document), joined; nil when
    /// there is none.
    public func joined(_ tag: Tag) -> String? {
        let pieces = strings(tag)
        return pieces.isEmpty ? nil : pieces.joined()
    }

    /// `text` in pieces a string field can carry, each ending at a Unicode scalar's end (so a
    /// character of many scalars never makes a piece too long), to be sent as several fields of
    /// one tag and joined (`joined`).
    public static func pieces(_ text: String, limit: Int = WireLimits.maxString) -> [String] {
        var out: [String] = [], current = String.UnicodeScalarView(), bytes = 0
        for scalar in text.unicodeScalars {
            let size = UTF8.width(scalar)
            if bytes + size > limit && !current.isEmpty {
                out.append(String(current))
                current = String.UnicodeScalarView()
                bytes = 0
            }
            current.append(scalar)
            bytes += size
        }
        if !current.isEmpty || out.isEmpty { out.append(String(current)) }
        return out
    }

    public func requireString(_ tag: Tag) throws(WireError) -> String {
        guard let v = string(tag) else { throw .missingField(tag) }
        return v
    }

    public func requireInt(_ tag: Tag) throws(WireError) -> Int32 {
        guard let v = int(tag) else { throw .missingField(tag) }
        return v
    }

    // MARK: encoding

    /// The frame's bytes; throws when it breaks a limit the peer would reject.
    public func encoded() throws(WireError) -> [UInt8] {
        try validate()
        var out: [UInt8] = []
        out.reserveCapacity(64)
        out.append(contentsOf: [0, 0, 0, 0])
        out.append(WireLimits.version)
        out.append(kind.rawValue)
        out.append(contentsOf: [0, 0])
        appendBE(&out, requestID)
        for f in fields {
            appendBE(&out, f.tag.rawValue)
            switch f.value {
            case .int(let v):
                appendBE(&out, UInt16(4))
                appendBE(&out, UInt32(bitPattern: v))
            case .string(let s):
                let bytes = Array(s.utf8)
                appendBE(&out, UInt16(bytes.count))
                out.append(contentsOf: bytes)
            }
        }
        let length = out.count - WireLimits.lengthSize
        guard length <= WireLimits.maxFrame else { throw .badLength(length) }
        let be = UInt32(length).bigEndian
        withUnsafeBytes(of: be) { for i in 0..<4 { out[i] = $0[i] } }
        return out
    }

    /// The same rules the decoder enforces, so an encoder can never emit what a decoder rejects.
    func validate() throws(WireError) {
        guard requestID != 0 else { throw .zeroRequestID }
        guard fields.count <= WireLimits.maxFields else { throw .tooManyFields }
        var seen = Set<Tag>()
        for f in fields {
            if !f.tag.isRepeatable && !seen.insert(f.tag).inserted { throw .duplicateTag(f.tag) }
            switch (f.tag.valueType, f.value) {
            case (.int, .int): break
            case (.string, .string(let s)):
                if s.utf8.count > WireLimits.maxString { throw .stringTooLong(f.tag) }
                if s.utf8.contains(0) { throw .stringHasNUL(f.tag) }
            default: throw .wrongType(f.tag)
            }
        }
    }

    // MARK: decoding

    /// Decodes one complete frame (length prefix included); every byte must belong to it.
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> Frame {
        guard bytes.count >= WireLimits.lengthSize else { throw .truncated }
        let length = Int(readBE32(bytes, 0))
        guard length >= WireLimits.headerRest, length <= WireLimits.maxFrame else { throw .badLength(length) }
        guard bytes.count == WireLimits.lengthSize + length else { throw .truncated }
        return try decodeBody(bytes[WireLimits.lengthSize...])
    }

    /// Decodes the bytes after the length prefix.
    static func decodeBody(_ body: ArraySlice<UInt8>) throws(WireError) -> Frame {
        var p = body.startIndex
        let end = body.endIndex
        guard end - p >= WireLimits.headerRest else { throw .truncated }
        let version = body[p]
        guard version == WireLimits.version else { throw .badVersion(version) }
        guard let kind = Kind(rawValue: body[p + 1]) else { throw .unknownKind(body[p + 1]) }
        let flags = UInt16(body[p + 2]) << 8 | UInt16(body[p + 3])
        guard flags == 0 else { throw .badFlags(flags) }
        let requestID = readBE32(body, p + 4)
        guard requestID != 0 else { throw .zeroRequestID }
        p += WireLimits.headerRest

        var fields: [Field] = []
        var seen = Set<Tag>()
        while p < end {
            guard fields.count < WireLimits.maxFields else { throw .tooManyFields }
            guard end - p >= 4 else { throw .truncated }
            let rawTag = UInt16(body[p]) << 8 | UInt16(body[p + 1])
            let len = Int(UInt16(body[p + 2]) << 8 | UInt16(body[p + 3]))
            p += 4
            guard let tag = Tag(rawValue: rawTag) else { throw .unknownTag(rawTag) }
            guard end - p >= len else { throw .truncated }
            if !tag.isRepeatable && !seen.insert(tag).inserted { throw .duplicateTag(tag) }
            let value = body[p..<(p + len)]
            p += len
            switch tag.valueType {
            case .int:
                guard len == 4 else { throw .badIntSize(tag, len) }
                fields.append(Field(tag, Int32(bitPattern: readBE32(value, value.startIndex))))
            case .string:
                guard len <= WireLimits.maxString else { throw .stringTooLong(tag) }
                guard !value.contains(0) else { throw .stringHasNUL(tag) }
                // Strict UTF-8: String(validating:) rejects overlongs, surrogates and truncation.
                guard let s = String(validating: value, as: UTF8.self) else { throw .invalidUTF8(tag) }
                fields.append(Field(tag, s))
            }
        }
        return Frame(kind, requestID: requestID, fields)
    }
}

/// Accumulates bytes from a stream and yields whole frames; rejects an oversized length at once.
public struct FrameReader: Sendable {
    private var buffer: [UInt8] = []
    public init() {}

    public mutating func append(_ bytes: some Sequence<UInt8>) { buffer.append(contentsOf: bytes) }

    /// Bytes received that do not yet make a whole frame.
    public var bufferedCount: Int { buffer.count }

    /// How many more bytes are needed before `next()` can return a frame (at least 1 when waiting).
    public var bytesWanted: Int {
        guard buffer.count >= WireLimits.lengthSize else { return WireLimits.lengthSize - buffer.count }
        let length = Int(readBE32(buffer, 0))
        return max(0, WireLimits.lengthSize + min(length, WireLimits.maxFrame) - buffer.count)
    }

    public mutating func next() throws(WireError) -> Frame? {
        guard buffer.count >= WireLimits.lengthSize else { return nil }
        let length = Int(readBE32(buffer, 0))
        guard length >= WireLimits.headerRest, length <= WireLimits.maxFrame else { throw .badLength(length) }
        let total = WireLimits.lengthSize + length
        guard buffer.count >= total else { return nil }
        let frame = try Frame.decodeBody(buffer[WireLimits.lengthSize..<total])
        buffer.removeFirst(total)
        return frame
    }
}

@inline(__always)
private func appendBE<T: FixedWidthInteger>(_ out: inout [UInt8], _ v: T) {
    withUnsafeBytes(of: v.bigEndian) { out.append(contentsOf: $0) }
}

@inline(__always)
private func readBE32<C: Collection<UInt8>>(_ c: C, _ i: C.Index) -> UInt32 where C.Index == Int {
    UInt32(c[i]) << 24 | UInt32(c[i + 1]) << 16 | UInt32(c[i + 2]) << 8 | UInt32(c[i + 3])
}
