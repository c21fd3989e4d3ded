// The placeholders of catalog strings: in order, reordered by a translator, and literal percents.
import Testing
@testable import TouchGateL10n

@Suite("Placeholders")
struct FormatTests {
    @Test func argumentsFillThePlaceholdersInOrder() {
        #expect(format("Scan %d of %d recorded", ["2", "5"]) == "Scan 2 of 5 recorded")
        #expect(format("No such user: %s", ["mallory"]) == "No such user: mallory")
    }

    @Test func aTranslationMayReorderThemByPosition() {
        #expect(format("%2$s 的 %1$s", ["right-thumb", "alice"]) == "alice 的 right-thumb")
    }

    @Test func aDoublePercentIsOnePercentAndOtherDirectivesAreLeftAlone() {
        #expect(format("100%% done", []) == "100% done")
        #expect(format("rate %x", ["1"]) == "rate %x")
    }

    @Test func aMissingArgumentLeavesTheSlotEmptyRatherThanCrash() {
        #expect(format("%s and %s", ["one"]) == "one and ")
        #expect(format("%3$s", ["a"]) == "")
    }

    @Test func argumentsAreNeverReadAsPlaceholders() {
        #expect(format("user %s", ["%s%d%%"]) == "user %s%d%%")
    }

    @Test func englishIsTheMsgidItself() {
        #expect(L("Wrong password", .english) == "Wrong password")
        #expect(NL("%d minute", "%d minutes", 1, .english, 1) == "1 minute")
        #expect(NL("%d minute", "%d minutes", 5, .english, 5) == "5 minutes")
    }

    @Test func aLanguageWithoutACatalogFallsBackToEnglish() {
        #expect(L("Wrong password", Language(locale: "xx_XX.UTF-8")) == "Wrong password")
        #expect(L("Wrong password", Language(locale: "../../etc/passwd")) == "Wrong password")
    }
}
