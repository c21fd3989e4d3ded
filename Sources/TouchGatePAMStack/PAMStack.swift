// A service's stack for one type, as Linux-PAM assembles it: the service file (else `other`),
// `include` and `@include` lines inlined, `substack` lines nested.
#if canImport(Glibc)
import Glibc
#endif

/// One module line of an assembled stack; a substack holds its own entries.
public struct StackEntry: Equatable, Sendable {
    public let control: PAMControl
    /// The module as written (`pam_unix.so` or an absolute path); empty for a substack.
    public let module: String
    public let arguments: [String]
    /// A `-type` line: Linux-PAM skips it quietly when the module is missing.
    public let quietIfMissing: Bool
    public let substack: [StackEntry]?
    /// Where it was written: `common-auth:17`.
    public let origin: String

    /// The module's file name without directory and `.so`: `pam_unix`.
    public var moduleName: String {
        var name = module.split(separator: "/").last.map(String.init) ?? module
        if name.hasSuffix(".so") { name.removeLast(3) }
        return name
    }

    /// Every module line, substacks opened, in order.
    public var flattened: [StackEntry] { substack.map { $0.flatMap(\.flattened) } ?? [self] }
}

public struct AssembledStack: Equatable, Sendable {
    public var entries: [StackEntry] = []
    /// Lines Linux-PAM would reject, and includes it could not follow.
    public var errors: [PAMSyntaxError] = []
    /// The file the service came from (`other` when the service has none), or nil when neither exists.
    public var serviceFile: String?

    /// Every module line, substacks opened.
    public var modules: [StackEntry] { entries.flatMap(\.flattened) }
}

/// A pam.d directory, under a root directory so that tests can point it at a fixture tree.
public struct PAMDirectory: Sendable {
    public let root: String
    public let directory: String
    /// Linux-PAM refuses deeper include chains; a loop ends here too.
    static let maxDepth = 16

    public init(root: String = "/") {
        self.root = root
        self.directory = Self.join(root, "etc/pam.d")
    }

    /// The service names: every regular file in the directory, sorted.
    public func services() -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasPrefix(".") || name.hasSuffix("~") || name.hasSuffix(".dpkg-old")
                || name.hasSuffix(".dpkg-dist") || name.hasSuffix(".pam-old") || name.hasSuffix(".pam-new")
            {
                continue
            }
            var st = stat()
            if stat(Self.join(directory, name), &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG { names.append(name) }
        }
        return names.sorted()
    }

    /// Whether the service has a file of its own (else Linux-PAM uses `other`).
    public func hasFile(_ service: String) -> Bool { text(of: service) != nil }

    /// The `type` stack of `service` (`auth`, …).
    public func stack(service: String, type: String) -> AssembledStack {
        var result = AssembledStack()
        let file = text(of: service) != nil ? service : (text(of: "other") != nil ? "other" : nil)
        guard let file else { return result }
        result.serviceFile = file
        result.entries = assemble(file: file, type: type, depth: 0, errors: &result.errors)
        return result
    }

    /// `type`'s lines of `file`: includes inlined, substacks nested. A missing or looping include
    /// is an error and contributes no lines (Linux-PAM then fails the whole stack).
    private func assemble(file: String, type: String, depth: Int, errors: inout [PAMSyntaxError]) -> [StackEntry] {
        guard let body = text(of: file) else { return [] }
        let (lines, syntax) = PAMConfigParser.parse(body, file: file)
        errors += syntax
        var entries: [StackEntry] = []
        for line in lines {
            let origin = "\(file):\(line.number)"
            func nested(_ target: String) -> [StackEntry]? {
                guard depth + 1 < Self.maxDepth else {
                    errors.append(
                        PAMSyntaxError(file: file, line: line.number, reason: "includes nested too deep (a loop?)"))
                    return nil
                }
                guard text(of: target) != nil else {
                    errors.append(
                        PAMSyntaxError(file: file, line: line.number, reason: "cannot read included file '\(target)'"))
                    return nil
                }
                return assemble(file: target, type: type, depth: depth + 1, errors: &errors)
            }
            switch line.kind {
            case .includeAll(let target):
                entries += nested(target) ?? []
            case .module(let lineType, let control, let path, let arguments, let quiet):
                guard lineType == type else { continue }
                switch control {
                case .include(let target):
                    entries += nested(target) ?? []
                case .substack(let target):
                    let inner = nested(target) ?? []
                    entries.append(
                        StackEntry(
                            control: PAMControl.keyword("required")!, module: "", arguments: [],
                            quietIfMissing: quiet, substack: inner, origin: origin))
                case .actions:
                    entries.append(
                        StackEntry(
                            control: control, module: path, arguments: arguments,
                            quietIfMissing: quiet, substack: nil, origin: origin))
                }
            }
        }
        return entries
    }

    /// A file's text, nil when it is missing or not a readable regular file. Relative names are
    /// in the pam.d directory; absolute ones under the root.
    public func text(of name: String) -> String? {
        guard !name.isEmpty, !name.contains("\0") else { return nil }
        let path = name.hasPrefix("/") ? Self.join(root, String(name.dropFirst())) : Self.join(directory, name)
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)  // a FIFO never blocks
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size < 1 << 20 else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func join(_ a: String, _ b: String) -> String {
        if a.hasSuffix("/") { return a + b }
        return a + "/" + b
    }
}
