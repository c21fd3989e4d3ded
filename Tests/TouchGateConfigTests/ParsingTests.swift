// touchgate.conf values that parse: defaults, every key, durations, booleans, comments, the shipped file.

import Testing
import TouchGateConfig
import TouchGatePolicy

@Suite struct ParsingTests {
    @Test func anEmptyFileGivesTheDefaults() throws {
        #expect(try ConfigFile.parse("") == DaemonConfig.defaults)
        #expect(try ConfigFile.parse("\n\n   \n\t\n") == DaemonConfig.defaults)
    }

    @Test func theDefaultsAreThoseOfTheSpec() {
        let c = DaemonConfig.defaults
        #expect(c.policy == PolicyConfig.defaults)
        #expect(c.policy.maxTries == 3)
        #expect(c.policy.timeout == 30)
        #expect(c.policy.lockoutThreshold == 5)
        #expect(c.policy.unlockIdleTimeout == 48 * 3600)
        #expect(c.policy.passwordInterval == 156 * 3600)
        #expect(c.policy.passwordIntervalGrace == 4 * 3600)
        #expect(c.policy.passwordBackoff == [60, 300, 900, 3600])
        #expect(c.passwordService == "touchgate")
        #expect(c.allowRemote == false)
    }

    @Test func everyKeyIsParsedIntoItsField() throws {
        let c = try ConfigFile.parse(
            """
            max_tries = 7
            timeout = 45
            lockout_threshold = 9
            require_password_after_boot = no
            unlock_idle_timeout = 12h
            password_interval = 10d
            password_interval_grace = 30m
            require_password_after_enrollment_change = false
            password_backoff_after = 3
            password_backoff = 30s, 2m ,1h
            password_service = touchgate-verify
            allow_remote = yes
            """)
        let expected = DaemonConfig(
            policy: PolicyConfig(
                maxTries: 7, timeout: 45, lockoutThreshold: 9, requirePasswordAfterBoot: false,
                unlockIdleTimeout: 12 * 3600, passwordInterval: 10 * 86_400, passwordIntervalGrace: 30 * 60,
                requirePasswordAfterEnrollmentChange: false, passwordBackoffAfter: 3,
                passwordBackoff: [30, 120, 3600]),
            passwordService: "touchgate-verify",
            allowRemote: true)
        #expect(c == expected)
    }

    @Test func keysNotGivenKeepTheirDefaults() throws {
        var expected = DaemonConfig.defaults
        expected.policy.maxTries = 2
        #expect(try ConfigFile.parse("max_tries = 2") == expected)
    }

    @Test(arguments: [
        ("90", Int64(90)), ("90s", 90), ("90m", 5400), ("48h", 172_800), ("7d", 604_800),
        ("1", 1), ("1s", 1), ("3650d", 315_360_000), ("0048h", 172_800),
    ])
    func durationsAcceptPlainSecondsAndEverySuffix(text: String, seconds: Int64) throws {
        let c = try ConfigFile.parse("unlock_idle_timeout = \(text)")
        #expect(c.policy.unlockIdleTimeout == seconds)
    }

    @Test(arguments: [("yes", true), ("true", true), ("no", false), ("false", false)])
    func booleansAcceptYesNoTrueFalse(text: String, value: Bool) throws {
        let c = try ConfigFile.parse("allow_remote = \(text)\nrequire_password_after_boot = \(text)")
        #expect(c.allowRemote == value)
        #expect(c.policy.requirePasswordAfterBoot == value)
    }

    @Test func commentsAndBlankLinesAreIgnored() throws {
        let c = try ConfigFile.parse(
            """
            # a whole-line comment
              # an indented one
            max_tries = 4   # after a value

            timeout=10#no spaces at all
            """)
        #expect(c.policy.maxTries == 4)
        #expect(c.policy.timeout == 10)
    }

    /// Linux-PAM reads a service's file by its name in lower case, and clients' names are so.
    @Test func serviceNamesAreTakenInLowerCaseAsPAMDoes() throws {
        let c = try ConfigFile.parse("password_service = TouchGate\nkeyring_services = Login,GDM-Password\n")
        #expect(c.passwordService == "touchgate")
        #expect(c.keyringServices == ["login", "gdm-password"])
    }

    @Test func whitespaceAroundKeyAndValueIsTrimmed() throws {
        let c = try ConfigFile.parse("\t password_service \t=\t sudo  \t")
        #expect(c.passwordService == "sudo")
    }

    @Test func crlfLineEndingsAreAccepted() throws {
        let c = try ConfigFile.parse("max_tries = 4\r\ntimeout = 5m\r\n")
        #expect(c.policy.maxTries == 4)
        #expect(c.policy.timeout == 300)
    }

    @Test func aLeadingByteOrderMarkIsIgnored() throws {
        #expect(try ConfigFile.parse("\u{FEFF}max_tries = 4\n").policy.maxTries == 4)
    }

    @Test func theBoundsOfEveryRangeAreAccepted() throws {
        let low = try ConfigFile.parse(
            """
            max_tries = 1
            timeout = 1
            lockout_threshold = 1
            unlock_idle_timeout = 1s
            password_interval = 1
            password_interval_grace = 1
            password_backoff_after = 1
            password_backoff = 1
            password_service = a
            """)
        #expect(
            low.policy
                == PolicyConfig(
                    maxTries: 1, timeout: 1, lockoutThreshold: 1, unlockIdleTimeout: 1, passwordInterval: 1,
                    passwordIntervalGrace: 1, passwordBackoffAfter: 1, passwordBackoff: [1]))
        let high = try ConfigFile.parse(
            """
            max_tries = 100
            timeout = 1h
            lockout_threshold = 1000
            unlock_idle_timeout = 3650d
            password_backoff_after = 1000
            password_backoff = 30d,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1
            password_service = \(String(repeating: "x", count: 64))
            """)
        #expect(high.policy.maxTries == 100)
        #expect(high.policy.timeout == 3600)
        #expect(high.policy.lockoutThreshold == 1000)
        #expect(high.policy.unlockIdleTimeout == 3650 * 86_400)
        #expect(high.policy.passwordBackoff.count == 16)
        #expect(high.policy.passwordBackoff.first == Int64(30 * 86_400))
    }

    @Test func theParsedConfigPassesThePolicysOwnValidator() throws {
        let c = try ConfigFile.parse("password_backoff = 1s\npassword_interval_grace = 1")
        #expect(c.policy.problems.isEmpty)
    }

    @Test func theShippedConfigFileParsesToTheDefaults() throws {
        let c = try ConfigFile.load(path: shippedConfigPath())
        #expect(c == DaemonConfig.defaults)
    }

    @Test func theShippedConfigFileDocumentsEveryKeyAtItsDefault() throws {
        let text = try #require(try readText(shippedConfigPath()))
        // Uncommenting every key line must still give the defaults: the shown values are the real ones.
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            if line.hasPrefix("#") && line.contains(" = ") && !line.hasPrefix("# ") { return line.dropFirst() }
            return line
        }.joined(separator: "\n")
        #expect(try ConfigFile.parse(uncommented) == DaemonConfig.defaults)
        for key in ConfigFile.keys {
            #expect(uncommented.contains("\n\(key) = "), "the shipped file does not show \(key)")
        }
    }

    @Test func aMissingFileMeansTheDefaults() throws {
        #expect(try ConfigFile.load(path: "/nonexistent/touchgate.conf") == DaemonConfig.defaults)
    }
}
