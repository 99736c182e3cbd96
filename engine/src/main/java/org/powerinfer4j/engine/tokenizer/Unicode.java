package org.powerinfer4j.engine.tokenizer;

/**
 * Code point classification as llama.cpp's {@code unicode.cpp} sees it ({@code unicode_cpt_flags}): one general
 * category bit per code point (from the Unicode tables of the running JDK) plus llama.cpp's fixed White_Space set.
 * The BPE pre-tokenizers depend on exactly these classes, not on {@link Character#isWhitespace} or Java regex's
 * own {@code \p{..}} tables.
 */
final class Unicode {
    static final int UNDEFINED = 0x0001;
    static final int NUMBER = 0x0002;
    static final int LETTER = 0x0004;
    static final int SEPARATOR = 0x0008;
    static final int MARK = 0x0010;
    static final int PUNCTUATION = 0x0020;
    static final int SYMBOL = 0x0040;
    static final int CONTROL = 0x0080;
    static final int CATEGORIES = 0x00FF;
    static final int WHITESPACE = 0x0100;

    /** Flags of the Basic Multilingual Plane, precomputed; supplementary planes are classified on demand. */
    private static final short[] BMP = new short[0x10000];

    static {
        for (int cp = 0; cp < 0x10000; cp++) BMP[cp] = (short) compute(cp);
    }

    private Unicode() {}

    /** llama.cpp's {@code unicode_cpt_flags_from_cpt}: never 0 for a code point (undefined ones have UNDEFINED). */
    static int flags(int cp) {
        if (cp >= 0 && cp < 0x10000) return BMP[cp];
        if (cp < 0 || cp > Character.MAX_CODE_POINT) return UNDEFINED;
        return compute(cp);
    }

    static boolean isWhitespace(int cp) {
        return (flags(cp) & WHITESPACE) != 0;
    }

    private static int compute(int cp) {
        int f = switch (Character.getType(cp)) {
            case Character.UPPERCASE_LETTER, Character.LOWERCASE_LETTER, Character.TITLECASE_LETTER,
                 Character.MODIFIER_LETTER, Character.OTHER_LETTER -> LETTER;
            case Character.NON_SPACING_MARK, Character.ENCLOSING_MARK, Character.COMBINING_SPACING_MARK -> MARK;
            case Character.DECIMAL_DIGIT_NUMBER, Character.LETTER_NUMBER, Character.OTHER_NUMBER -> NUMBER;
            case Character.SPACE_SEPARATOR, Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR -> SEPARATOR;
            case Character.CONTROL, Character.FORMAT, Character.PRIVATE_USE, Character.SURROGATE -> CONTROL;
            case Character.DASH_PUNCTUATION, Character.START_PUNCTUATION, Character.END_PUNCTUATION,
                 Character.CONNECTOR_PUNCTUATION, Character.OTHER_PUNCTUATION, Character.INITIAL_QUOTE_PUNCTUATION,
                 Character.FINAL_QUOTE_PUNCTUATION -> PUNCTUATION;
            case Character.MATH_SYMBOL, Character.CURRENCY_SYMBOL, Character.MODIFIER_SYMBOL, Character.OTHER_SYMBOL -> SYMBOL;
            default -> UNDEFINED; // Cn
        };
        // llama.cpp's White_Space list (gen-unicode-data.py), deliberately not Java's notion of whitespace
        boolean ws = (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680
                || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
        return ws ? f | WHITESPACE : f;
    }

    /** Simple lower-case mapping, as llama.cpp's {@code unicode_tolower} (UnicodeData simple mapping). */
    static int toLower(int cp) {
        return Character.toLowerCase(cp);
    }

    /**
     * The code points of {@code s}. Unpaired surrogates (which have no UTF-8 form) become U+FFFD, just as
     * llama.cpp turns undecodable UTF-8 into U+FFFD before pre-tokenizing.
     */
    static int[] codePoints(String s) {
        int[] out = new int[s.length()];
        int n = 0;
        for (int i = 0; i < s.length(); ) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                out[n++] = Character.toCodePoint(c, s.charAt(i + 1));
                i += 2;
            } else {
                out[n++] = Character.isSurrogate(c) ? 0xFFFD : c;
                i++;
            }
        }
        return n == out.length ? out : java.util.Arrays.copyOf(out, n);
    }

    /** {@code s} with every unpaired surrogate replaced by U+FFFD (a no-op copy-free return for valid text). */
    static String sanitize(String s) {
        int n = s.length();
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (!Character.isSurrogate(c)) continue;
            if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
                continue;
            }
            int[] cps = codePoints(s);
            return new String(cps, 0, cps.length);
        }
        return s;
    }
}
