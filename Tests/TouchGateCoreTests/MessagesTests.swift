// Messages: every sentence exists in English and Simplified Chinese, chosen from the client's locale
// (docs/spec.md §8).
import Testing
@testable import TouchGateCore
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

@Suite("Messages")
struct MessagesTests {
    @Test(arguments: ["zh_CN.UTF-8", "zh_CN", "zh_CN.utf8", "zh_CN.UTF-8@pinyin"])
    func aChineseLocaleReadsTheChineseCatalog(_ locale: String) {
        #expect(Text.recognised.render(Language(locale: locale)) == Text.recognised.render(.chinese))
        #expect(Text.recognised.render(Language(locale: locale)) != "Fingerprint recognised")
    }

    @Test(arguments: [nil, "", "en_US.UTF-8", "C", "C.UTF-8", "POSIX", "de_DE.UTF-8", "../../etc/zh_CN"] as [String?])
    func aLocaleWithoutACatalogReadsTheMsgidsThemselves(_ locale: String?) {
        #expect(Text.recognised.render(Language(locale: locale)) == "Fingerprint recognised")
    }

    /// One of every sentence, with every hint and reason; the switch makes a new case a compile error here.
    static let sentences: [Text] = {
        var all: [Text] = [
            .placeFinger(swipe: true), .placeFinger(swipe: false),
            .enrollPrompt(finger: .rightIndex, stages: 5),
            .noMatch(triesLeft: 2), .noMatch(triesLeft: 1),
            .notRecognised(tries: 3), .notRecognised(tries: 1),
            .queued(ahead: 2), .recognised, .enrolled(.leftThumb), .enrollStage(2, 5),
            .noReader, .readerRemoved, .readerTooHot, .readerBusy, .timedOut(seconds: 30),
            .remoteSession, .notEnrolled, .notPermitted, .userUnknown("mallory"),
            .fingerNotEnrolled(.rightLittle), .deleted(1), .deleted(3), .internalError, .badRequest,
            .cancelled, .shuttingDown, .suspending, .stateUnreadable, .notEnabled, .lockout(attempts: 5),
            .backoff(seconds: 45), .wrongPassword, .wrongPasswordBackoff(seconds: 300),
            .passwordNotSet, .passwordNeeded, .passwordAccepted, .printsUnsafe, .printsSealed, .printsSealedRefused,
            .keyringKept, .keyringForgotten, .keyringNotKept, .keyringNotSealedNow, .keyringVoid, .keyringClosed, .busy,
            .enrollNotSealedNow, .enrollSealingRefused, .keyringSealingRefused,
            .templateDamaged(.leftThumb), .templatesDamaged([.leftThumb, .rightIndex]),
            .readerProtocolError, .readerStorageFull, .readerFailed, .enrolledOnReader, .keptOnReader,
            .alreadyEnrolled(.leftThumb), .alreadyEnrolledFor(.rightIndex, user: "alice"), .enrolledForAnotherUser,
        ]
        all += RetryHint.allCases.map(Text.retry)
        all += PasswordRequiredReason.allCases.map(Text.passwordRequired)
        for text in all { _ = coverage(text) }
        return all
    }()

    /// Not called for its value: it stops compiling when a case is added without a sample above.
    static func coverage(_ text: Text) -> Bool {
        switch text {
        case .placeFinger, .enrollPrompt, .retry, .noMatch, .notRecognised, .queued, .recognised, .enrolled,
            .enrollStage, .noReader, .readerRemoved, .readerTooHot, .readerBusy, .timedOut, .remoteSession,
            .notEnrolled, .notPermitted, .userUnknown, .fingerNotEnrolled, .deleted, .internalError, .badRequest,
            .cancelled, .shuttingDown, .suspending, .stateUnreadable, .notEnabled, .lockout, .passwordRequired,
            .backoff,
            .wrongPassword, .wrongPasswordBackoff, .passwordNotSet, .passwordNeeded, .passwordAccepted,
            .printsUnsafe, .printsSealed, .printsSealedRefused, .keyringKept, .keyringForgotten, .keyringNotKept,
            .keyringNotSealedNow, .keyringVoid, .enrollNotSealedNow, .enrollSealingRefused, .keyringSealingRefused,
            .keyringClosed, .busy, .templateDamaged, .templatesDamaged, .readerProtocolError, .readerStorageFull,
            .readerFailed, .enrolledOnReader, .keptOnReader, .alreadyEnrolled, .alreadyEnrolledFor,
            .enrolledForAnotherUser:
            return true
        case .done:
            return false  // the caller's own sentence, passed through unchanged
        case .lines:
            return false  // other sentences, one per line
        }
    }

    @Test(arguments: sentences)
    func everySentenceHasAnEnglishAndADifferentChineseRendering(_ text: Text) {
        let english = text.render(.english)
        let chinese = text.render(.chinese)
        #expect(!english.isEmpty)
        #expect(!chinese.isEmpty)
        #expect(chinese != english)
        #expect(chinese.unicodeScalars.contains { (0x4E00...0x9FFF).contains($0.value) }, "\(chinese)")
        #expect(!english.unicodeScalars.contains { (0x4E00...0x9FFF).contains($0.value) }, "\(english)")
    }

    @Test func everySentenceIsDistinctInEachLanguage() {
        let english = Self.sentences.map { $0.render(.english) }
        let chinese = Self.sentences.map { $0.render(.chinese) }
        #expect(Set(english).count == english.count)
        #expect(Set(chinese).count == chinese.count)
    }

    @Test func theCallersOwnSentenceIsPassedThroughInBothLanguages() {
        #expect(
            Text.done("sudo: touch the reader to run as root").render(.english)
                == "sudo: touch the reader to run as root")
        #expect(
            Text.done("sudo: touch the reader to run as root").render(.chinese)
                == "sudo: touch the reader to run as root")
    }

    /// libfprint's TOO_FAST hint (code 4, libfprint 1.94.9) has a sentence of its own for the PAM
    /// prompt and the CLI, as fprintd's clients have one for verify-too-fast.
    @Test func theTooFastHintHasASentenceOfItsOwn() {
        let others = [RetryHint.general, .tooShort, .centerFinger, .removeFinger].map {
            Text.retry($0).render(.english)
        }
        #expect(RetryHint(libfprintCode: 4) == .tooFast)
        #expect(!others.contains(Text.retry(.tooFast).render(.english)))
    }

    @Test func sentencesCarryTheirNumbers() {
        #expect(
            Text.lockout(attempts: 5).render(.english)
                == "Fingerprint locked after 5 failed attempts: enter your password")
        #expect(Text.lockout(attempts: 5).render(.chinese) == "指纹连续 5 次验证失败已锁定：请输入密码")
        #expect(
            Text.lockout(attempts: 1).render(.english)
                == "Fingerprint locked after 1 failed attempt: enter your password")
        #expect(Text.lockout(attempts: 1).render(.chinese) == "指纹连续 1 次验证失败已锁定：请输入密码")
        #expect(Text.noMatch(triesLeft: 1).render(.english) == "Fingerprint not recognised, try again (1 try left)")
        #expect(Text.noMatch(triesLeft: 2).render(.english) == "Fingerprint not recognised, try again (2 tries left)")
        #expect(Text.queued(ahead: 2).render(.english) == "Waiting for the fingerprint reader (2 ahead in the queue)")
        #expect(Text.retry(.tooShort).render(.english) == "Swipe was too short, try again")
        #expect(Text.retry(.tooFast).render(.english) == "The scan was too fast, try again")
        #expect(
            Text.passwordRequired(.boot).render(.english)
                == "Enter your password: it is required once after the computer starts")
    }

    @Test(arguments: [
        (1, "1 second"), (45, "45 seconds"), (59, "59 seconds"), (60, "1 minute"), (61, "2 minutes"),
        (300, "5 minutes"), (301, "6 minutes"), (3599, "60 minutes"), (3600, "1 hour"), (3601, "2 hours"),
        (7200, "2 hours"),
    ])
    func durationsRoundUpSoTheWaitIsNeverUnderstated(_ seconds: Int, _ expected: String) {
        #expect(Text.duration(seconds, .english) == expected)
    }

    @Test(arguments: [(45, "45 秒"), (60, "1 分钟"), (61, "2 分钟"), (3600, "1 小时"), (3601, "2 小时")])
    func chineseDurationsRoundUpToo(_ seconds: Int, _ expected: String) {
        #expect(Text.duration(seconds, .chinese) == expected)
    }

    @Test func backoffSentencesUseTheRoundedDuration() {
        #expect(Text.backoff(seconds: 61).render(.english) == "Too many wrong passwords: try again in 2 minutes")
        #expect(Text.backoff(seconds: 61).render(.chinese) == "密码错误次数过多：请在 2 分钟后重试")
        #expect(
            Text.wrongPasswordBackoff(seconds: 60).render(.english)
                == "Wrong password: password entry is locked for 1 minute")
    }

    @Test func aDamagedPrintNamesTheFingerToEnrollAgainInBothLanguages() {
        #expect(
            Text.templateDamaged(.leftThumb).render(.english)
                == "The enrolled left-thumb is damaged: enroll it again (touchgate enroll --finger left-thumb)")
        #expect(Text.templateDamaged(.leftThumb).render(.chinese).contains("left-thumb"))
        #expect(
            Text.templatesDamaged([.leftThumb, .rightIndex]).render(.english).contains("left-thumb, right-index-finger")
        )
    }

    @Test func severalSentencesAreRenderedOnePerLine() {
        let text = Text.lines([.lockout(attempts: 5), .backoff(seconds: 60)])
        #expect(
            text.render(.english) == "Fingerprint locked after 5 failed attempts: enter your password\n"
                + "Too many wrong passwords: try again in 1 minute")
        #expect(text.render(.chinese) == "指纹连续 5 次验证失败已锁定：请输入密码\n密码错误次数过多：请在 1 分钟后重试")
    }
}
