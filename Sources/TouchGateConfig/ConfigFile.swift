// touchgate.conf: `key = value` lines parsed and validated into a DaemonConfig (docs/spec.md §6).
#if canImport(Glibc)
import Glibc
#endif
import TouchGatePolicy

public enum ConfigFile {
    public static let defaultPath = "/etc/touchgate/touchgate.conf"

    /// Larger than any sane config; a bigger file is refused rather than read into memory.
    public static let maxSize = 1 << 20

    /// Every key the file accepts, in the order the shipped file documents them.
    public static var keys: [String] { settings.map(\.key) }

    /// Parses and validates the whole text; the first problem stops it, naming its line.
    /// Used by the daemon at start and by `touchgate check-config`, so both refuse the same files.
    public static func parse(_ text: String) throws(ConfigError) -> DaemonConfig {
        try parse(text, skipping: nil)
    }

    /// Every line that can be used, each problem told to `problem` and its line left out (the
    /// policy's values then stay as they came): for what must go on with a broken file, the
    /// export of the prints at the package's removal.
    public static func parseLeniently(_ text: String, problem: (ConfigError) -> Void) -> DaemonConfig {
        withoutActuallyEscaping(problem) { told in (try? parse(text, skipping: told)) ?? DaemonConfig() }
    }

    private static func parse(_ text: String, skipping: ((ConfigError) -> Void)?) throws(ConfigError) -> DaemonConfig {
        var config = DaemonConfig()
        var firstLine: [String: Int] = [:]
        // An editor's byte-order mark is not part of the first key.
        let body = text.hasPrefix("\u{FEFF}") ? text.dropFirst() : Substring(text)
        let lines = body.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (index, raw) in lines.enumerated() {
            do {
                try apply(raw, line: index + 1, to: &config, firstLine: &firstLine)
            } catch {
                guard let skipping else { throw error }
                skipping(error)
            }
        }
        // The policy's own validator too, so the daemon can never start with values it would refuse.
        if let problem = config.policy.problems.first {
            let error = ConfigError(line: firstLine[problem.key] ?? 0, message: "\(problem.key) \(problem.reason)")
            guard let skipping else { throw error }
            skipping(error)
        }
        return config
    }

    private static func apply(
        _ raw: Substring, line: Int, to config: inout DaemonConfig, firstLine: inout [String: Int]
    ) throws(ConfigError) {
        func fail(_ message: String) -> ConfigError { ConfigError(line: line, message: message) }

        // '#' starts a comment anywhere: no value may contain one.
        let content = raw.firstIndex(of: "#").map { raw[..<$0] } ?? raw
        let statement = ConfigValues.trimmed(content)
        if statement.isEmpty { return }

        guard let equals = statement.firstIndex(of: "=") else {
            throw fail("expected 'key = value', got '\(statement)'")
        }
        let key = ConfigValues.trimmed(statement[..<equals])
        let value = ConfigValues.trimmed(statement[statement.index(after: equals)...])
        guard !key.isEmpty else { throw fail("missing key before '='") }
        guard let setting = settings.first(where: { $0.key == key }) else {
            throw fail("unknown key '\(key)'")
        }
        if let first = firstLine[key] {
            throw fail("\(key) is given twice (first on line \(first))")
        }
        firstLine[key] = line
        guard !value.isEmpty else { throw fail("\(key) has an empty value") }
        do {
            try setting.apply(value, &config)
        } catch {
            throw fail("\(key) \(error.reason)")
        }
    }

    /// Reads and parses the file at `path`. A missing file means the defaults (docs/spec.md §6);
    /// an unreadable one throws `ConfigReadError`, an invalid one `ConfigError`.
    public static func load(path: String) throws -> DaemonConfig {
        try parse(text(path))
    }

    /// As `load`, but every usable line is taken and each problem told to `problem` (a file that
    /// cannot be read at all gives the defaults).
    public static func loadLeniently(path: String, problem: (String) -> Void) -> DaemonConfig {
        do {
            return parseLeniently(try text(path)) { problem("\($0)") }
        } catch {
            problem("\(error)")
            return DaemonConfig()
        }
    }

    /// As `load`, from the file's bytes read elsewhere (nil: there is no file).
    public static func parse(contents bytes: [UInt8]?) throws(ConfigError) -> DaemonConfig {
        try parse(text(bytes))
    }

    private static func text(_ path: String) throws -> String {
        try text(try readFile(path))
    }

    private static func text(_ bytes: [UInt8]?) throws(ConfigError) -> String {
        guard let bytes else { return "" }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigError(line: firstLineNotUTF8(bytes), message: "the line is not valid UTF-8")
        }
        return text
    }

    // MARK: keys

    private struct Setting: Sendable {
        let key: String
        let apply: @Sendable (String, inout DaemonConfig) throws(ValueProblem) -> Void
    }

    private static let maxDuration: Int64 = 3650 * ConfigValues.day

    private static let settings: [Setting] = [
        Setting(key: "max_tries") { v, c throws(ValueProblem) in
            c.policy.maxTries = try ConfigValues.count(v, in: 1...100)
        },
        Setting(key: "timeout") { v, c throws(ValueProblem) in
            c.policy.timeout = try ConfigValues.duration(v, in: 1...3600)
        },
        Setting(key: "lockout_threshold") { v, c throws(ValueProblem) in
            c.policy.lockoutThreshold = try ConfigValues.count(v, in: 1...1000)
        },
        Setting(key: "require_password_after_boot") { v, c throws(ValueProblem) in
            c.policy.requirePasswordAfterBoot = try ConfigValues.boolean(v)
        },
        Setting(key: "unlock_idle_timeout") { v, c throws(ValueProblem) in
            c.policy.unlockIdleTimeout = try ConfigValues.duration(v, in: 1...maxDuration)
        },
        Setting(key: "password_interval") { v, c throws(ValueProblem) in
            c.policy.passwordInterval = try ConfigValues.duration(v, in: 1...maxDuration)
        },
        Setting(key: "password_interval_grace") { v, c throws(ValueProblem) in
            c.policy.passwordIntervalGrace = try ConfigValues.duration(v, in: 1...maxDuration)
        },
        Setting(key: "require_password_after_enrollment_change") { v, c throws(ValueProblem) in
            c.policy.requirePasswordAfterEnrollmentChange = try ConfigValues.boolean(v)
        },
        Setting(key: "password_backoff_after") { v, c throws(ValueProblem) in
            c.policy.passwordBackoffAfter = try ConfigValues.count(v, in: 1...1000)
        },
        Setting(key: "password_backoff") { v, c throws(ValueProblem) in
            c.policy.passwordBackoff = try ConfigValues.durations(v, steps: 1...16, each: 1...(30 * ConfigValues.day))
        },
        Setting(key: "password_service") { v, c throws(ValueProblem) in
            c.passwordService = try ConfigValues.serviceName(v)
        },
        Setting(key: "allow_remote") { v, c throws(ValueProblem) in
            c.allowRemote = try ConfigValues.boolean(v)
        },
        Setting(key: "print_store") { v, c throws(ValueProblem) in
            c.printStore = try ConfigValues.absolutePath(v)
        },
        Setting(key: "fprintd_api") { v, c throws(ValueProblem) in
            c.fprintdAPI = try ConfigValues.boolean(v)
        },
        Setting(key: "seal") { v, c throws(ValueProblem) in
            guard let mode = SealMode(rawValue: v) else {
                throw ValueProblem(reason: "must be auto, tpm or no, got '\(v)'")
            }
            c.seal = mode
        },
        Setting(key: "tpm") { v, c throws(ValueProblem) in
            c.tpm = try ConfigValues.tcti(v)
        },
        Setting(key: "seal_pcrs") { v, c throws(ValueProblem) in
            c.sealPCRs = try ConfigValues.pcrs(v)
        },
        Setting(key: "keyring_services") { v, c throws(ValueProblem) in
            c.keyringServices = try ConfigValues.serviceNames(v)
        },
        Setting(key: "keyring_without_tpm") { v, c throws(ValueProblem) in
            c.keyringWithoutTPM = try ConfigValues.boolean(v)
        },
    ]

    // MARK: reading

    /// The file's bytes; nil when it does not exist.
    private static func readFile(_ path: String) throws(ConfigReadError) -> [UInt8]? {
        func failure(_ e: Int32) -> ConfigReadError {
            ConfigReadError(path: path, reason: String(cString: strerror(e)))
        }
        // O_NONBLOCK: a FIFO at the path is refused below instead of waiting for a writer.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        if fd < 0 {
            let e = errno
            if e == ENOENT { return nil }
            throw failure(e)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw failure(errno) }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw ConfigReadError(
                path: path, reason: (st.st_mode & S_IFMT) == S_IFDIR ? "is a directory" : "not a regular file")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure(errno)
            }
            bytes.append(contentsOf: chunk[0..<n])
            guard bytes.count <= maxSize else {
                throw ConfigReadError(path: path, reason: "larger than \(maxSize / 1024) KiB")
            }
        }
        return bytes
    }

    private static func firstLineNotUTF8(_ bytes: [UInt8]) -> Int {
        for (i, line) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated()
        where String(validating: line, as: UTF8.self) == nil {
            return i + 1
        }
        return 0
    }
}
