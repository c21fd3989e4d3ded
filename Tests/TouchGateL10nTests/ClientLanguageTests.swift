// A client's LOCALE as the daemon takes it: a language it has a catalog for, or English, so a
// made-up name never reaches the C library (which keeps each name it failed to open for good).
import Testing
import TouchGateL10n

@Suite("A client's language")
struct ClientLanguageTests {
    @Test func aLocaleOfALanguageWithACatalogIsThatLanguageInUTF8() throws {
        try #require(Catalogs.languages.contains("zh_CN"), "the tests' catalogs (TOUCHGATE_LOCALEDIR)")
        for name in ["zh_CN.UTF-8", "zh_CN.GB18030", "zh_CN", "zh_CN.utf8@pinyin"] {
            #expect(Language.ofClient(name) == Language(locale: "zh_CN.UTF-8"), "\(name)")
        }
    }

    @Test func everyOtherNameIsEnglishWithoutBeingOpened() {
        for name in [nil, "", "C", "C.UTF-8", "POSIX", "en_US.UTF-8", "zh_TW.UTF-8", "zh", "zz_ZZ.c1@m1", "../zh_CN"] {
            #expect(Language.ofClient(name) == .english, "\(String(describing: name))")
        }
    }
}
