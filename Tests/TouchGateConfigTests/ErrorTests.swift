// touchgate.conf values that are refused: each kind of mistake names its line and says why.

import Glibc
import Testing
import TouchGateConfig

@Suite struct ErrorTests {
    /// The error `text` gives, or nil when it parses.
    func error(_ text: String) -> ConfigError? {
        do {
            _ = try ConfigFile.parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func anUnknownKeyIsAnErrorOnItsLine() {
        let e = error("max_tries = 3\n\n# comment\ntimeout = 5\n\n\nmax_try = 3")
        #expect(e == ConfigError(line: 7, message: "unknown key 'max_try'"))
        #expect(e?.description == "line 7: unknown key 'max_try'")
    }

    @Test func aKeyGivenTwiceNamesBothLines() {
        #expect(
            error("timeout = 5\nmax_tries = 3\ntimeout = 6")
                == ConfigError(line: 3, message: "timeout is given twice (first on line 1)"))
    }

    @Test func aLineWithoutEqualsIsAnError() {
        #expect(
            error("# header\nmax_tries 3")
                == ConfigError(line: 2, message: "expected 'key = value', got 'max_tries 3'"))
    }

    @Test func aMissingKeyIsAnError() {
        #expect(error("\n= 3") == ConfigError(line: 2, message: "missing key before '='"))
    }

    @Test func anEmptyValueIsAnError() {
        #expect(error("max_tries = 2\ntimeout =   ") == ConfigError(line: 2, message: "timeout has an empty value"))
        #expect(error("timeout = # nothing") == ConfigError(line: 1, message: "timeout has an empty value"))
    }

    @Test func anOutOfRangeNumberSaysTheRangeAndTheValue() {
        #expect(error("\n\nmax_tries = 0")?.description == "line 3: max_tries must be between 1 and 100, got 0")
        #expect(error("max_tries = 101")?.message == "max_tries must be between 1 and 100, got 101")
        #expect(error("lockout_threshold = 1001")?.message == "lockout_threshold must be between 1 and 1000, got 1001")
        #expect(
            error("password_backoff_after = 0")?.message == "password_backoff_after must be between 1 and 1000, got 0")
    }

    @Test(arguments: ["abc", "-1", "+3", "3.0", "3 4", "0x10", "３"])
    func aBadNumberIsAnError(text: String) {
        #expect(
            error("max_tries = \(text)")
                == ConfigError(line: 1, message: "max_tries must be a whole number between 1 and 100, got '\(text)'"))
    }

    @Test func anOverflowingNumberIsOutOfRangeNotACrash() {
        #expect(
            error("max_tries = 99999999999999999999999")?.message
                == "max_tries must be between 1 and 100, got 99999999999999999999999")
        #expect(
            error("timeout = 9223372036854775807d")?.message
                == "timeout must be between 1 second and 1 hour, got 9223372036854775807d")
        #expect(error("password_interval = 106751991167301d")?.line == 1)
    }

    @Test func anOutOfRangeDurationSaysTheBoundsInWords() {
        #expect(error("timeout = 0")?.message == "timeout must be between 1 second and 1 hour, got 0")
        #expect(error("timeout = 61m")?.message == "timeout must be between 1 second and 1 hour, got 61m")
        #expect(
            error("unlock_idle_timeout = 3651d")?.message
                == "unlock_idle_timeout must be between 1 second and 3650 days, got 3651d")
        #expect(
            error("password_interval_grace = 0s")?.message
                == "password_interval_grace must be between 1 second and 3650 days, got 0s")
    }

    @Test(arguments: ["5x", "h", "48 h", "48H", "1.5h", "-5s", "5ms", "s5"])
    func aBadDurationIsAnError(text: String) {
        #expect(
            error("password_interval = \(text)")
                == ConfigError(
                    line: 1,
                    message: "password_interval must be a duration such as 30, 45s, 90m, 48h or 7d, got '\(text)'"))
    }

    @Test(arguments: ["Yes", "1", "on", "y", "maybe"])
    func aBadBooleanIsAnError(text: String) {
        #expect(
            error("allow_remote = \(text)")
                == ConfigError(line: 1, message: "allow_remote must be yes, no, true or false, got '\(text)'"))
    }

    @Test func aBadBackoffListNamesTheStep() {
        #expect(
            error("password_backoff = 1m,,5m")?.message
                == "password_backoff has an empty step in '1m,,5m' (write steps like 1m,5m,15m,1h)")
        #expect(error("password_backoff = 1m,5m,")?.line == 1)
        #expect(
            error("password_backoff = 1m, 5x")?.message
                == "password_backoff step 2 must be a duration such as 30, 45s, 90m, 48h or 7d, got '5x'")
        #expect(
            error("password_backoff = 1m,31d")?.message
                == "password_backoff step 2 must be between 1 second and 30 days, got 31d")
        #expect(
            error("password_backoff = 0")?.message
                == "password_backoff step 1 must be between 1 second and 30 days, got 0")
        let seventeen = Array(repeating: "1m", count: 17).joined(separator: ",")
        #expect(
            error("password_backoff = \(seventeen)")?.message
                == "password_backoff must have between 1 and 16 steps, got 17")
    }

    @Test(arguments: [".", "..", "a/b", "../etc", "sudo su", "tøuch", String(repeating: "x", count: 65)])
    func aBadServiceNameIsAnError(text: String) {
        let e = error("password_service = \(text)")
        #expect(e?.line == 1)
        #expect(e?.message.hasPrefix("password_service must be a PAM service name") == true)
    }

    @Test func theFirstProblemIsTheOneReported() {
        #expect(error("max_tries = 3\ntimeout = 0\nbogus = 1")?.line == 2)
    }

    @Test func lineNumbersCountBlankAndCommentLinesAndCRLF() {
        #expect(error("# a\r\n\r\n  \r\n# b\r\nmax_tries = 0\r\n")?.line == 5)
    }

    @Test func anInvalidUTF8LineIsNamedWhenLoading() throws {
        let path = try temporaryFile(Array("max_tries = 3\n# caf".utf8) + [0xE9] + Array("\n".utf8))
        defer { removeFile(path) }
        #expect(throws: ConfigError(line: 2, message: "the line is not valid UTF-8")) {
            try ConfigFile.load(path: path)
        }
    }

    @Test func loadReportsTheLineOfAnInvalidFile() throws {
        let path = try temporaryFile(Array("max_tries = 3\nmax_tries = 4\n".utf8))
        defer { removeFile(path) }
        #expect(throws: ConfigError(line: 2, message: "max_tries is given twice (first on line 1)")) {
            try ConfigFile.load(path: path)
        }
    }

    @Test(.timeLimit(.minutes(1))) func aFIFOIsRefusedWithoutWaitingForAWriter() throws {
        let path = try temporaryFile([])
        removeFile(path)
        #expect(mkfifo(path, 0o600) == 0)
        defer { removeFile(path) }
        #expect(throws: ConfigReadError(path: path, reason: "not a regular file")) {
            try ConfigFile.load(path: path)
        }
    }

    @Test func aDirectoryIsUnreadableNotTheDefaults() {
        #expect(throws: ConfigReadError(path: "/", reason: "is a directory")) {
            try ConfigFile.load(path: "/")
        }
    }
}
