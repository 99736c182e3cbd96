package org.powerinfer4j.engine.grammar;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A grammar expression over bytes, before {@link GrammarBuilder} flattens it into rules: one byte out of a set,
 * a sequence, alternatives, a reference to a rule, a bounded or unbounded repetition.
 */
sealed interface Expr {
    /** One byte whose value is in {@code set} (256 bits). */
    record ByteSet(long[] set) implements Expr {}

    record Seq(List<Expr> items) implements Expr {}

    record Alt(List<Expr> options) implements Expr {}

    record Ref(int rule) implements Expr {}

    /** {@code min} to {@code max} copies of {@code item}; {@code max} -1 = unbounded. */
    record Repeat(Expr item, int min, int max) implements Expr {}

    Expr EMPTY = new Seq(List.of());

    static Expr seq(Expr... items) {
        return new Seq(List.of(items));
    }

    static Expr alt(Expr... options) {
        return options.length == 1 ? options[0] : new Alt(List.of(options));
    }

    static Expr alt(List<Expr> options) {
        return options.size() == 1 ? options.getFirst() : new Alt(List.copyOf(options));
    }

    static Expr opt(Expr e) {
        return new Repeat(e, 0, 1);
    }

    static Expr star(Expr e) {
        return new Repeat(e, 0, -1);
    }

    /** The exact UTF-8 bytes of {@code text}. */
    static Expr literal(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        List<Expr> items = new ArrayList<>(b.length);
        for (byte x : b) items.add(bytes(x & 0xFF, x & 0xFF));
        return new Seq(items);
    }

    /** One byte in {@code [from, to]}. */
    static ByteSet bytes(int from, int to) {
        long[] s = new long[4];
        for (int c = from; c <= to; c++) s[c >> 6] |= 1L << (c & 63);
        return new ByteSet(s);
    }

    /** One byte out of the (ASCII) characters of {@code chars}. */
    static ByteSet anyOf(String chars) {
        long[] s = new long[4];
        for (int i = 0; i < chars.length(); i++) s[chars.charAt(i) >> 6] |= 1L << (chars.charAt(i) & 63);
        return new ByteSet(s);
    }

    static ByteSet union(ByteSet... sets) {
        long[] s = new long[4];
        for (ByteSet b : sets) for (int i = 0; i < 4; i++) s[i] |= b.set()[i];
        return new ByteSet(s);
    }
}
