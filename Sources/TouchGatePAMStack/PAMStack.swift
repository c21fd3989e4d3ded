// A service's stack for one type, as Linux-PAM assembles it: the service file (else `other`),
// `include` and `@include` lines inlined, `substack` lines nested.
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

/// A pam.d directory, under a root directory so that tests can point it at a fixture tree; every
/// file is looked up inside the root (`RootedTree`), as Linux-PAM chrooted there would.
public struct PAMDirectory: Sendable {
    public let tree: RootedTree
    static let directory = "/etc/pam.d"
    /// Linux-PAM refuses deeper include chains; a loop ends here too.
    static let maxDepth = 16

    public init(root: String = "/") { tree = RootedTree(root: root) }

    /// The service names: every regular file in the directory, sorted.
    public func services() -> [String] {
        var names: [String] = []
        for entry in tree.entries(Self.directory) ?? [] where entry.isFile {
            let name = entry.name
            if name.hasPrefix(".") || name.hasSuffix("~") || name.hasSuffix(".dpkg-old")
                || name.hasSuffix(".dpkg-dist") || name.hasSuffix(".pam-old") || name.hasSuffix(".pam-new")
            {
                continue
            }
            names.append(name)
        }
        return names
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
        guard case .file(let bytes)? = tree.read(name.hasPrefix("/") ? name : Self.directory + "/" + name) else {
            return nil
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
