package org.powerinfer4j.engine.grammar;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Collects rules as {@link Expr}s and flattens them into a {@link Grammar}: each rule becomes a list of
 * alternatives, each alternative a sequence of byte-set and rule-reference elements ending in END (the layout of
 * llama.cpp's GBNF grammars). Nested alternatives and repetitions become helper rules; unbounded repetition is
 * right-recursive, which the matcher runs as a tail call, so the stack does not grow with a string's length.
 */
final class GrammarBuilder {
    private final List<Expr> rules = new ArrayList<>();
    private final List<String> names = new ArrayList<>();
    private final Map<String, Integer> named = new HashMap<>();

    /** A new rule, defined later with {@link #define}. */
    int newRule(String name) {
        rules.add(null);
        names.add(name);
        return rules.size() - 1;
    }

    void define(int rule, Expr e) {
        rules.set(rule, e);
    }

    /** A reference to the shared rule {@code name}, defined by {@code body} the first time it is asked for. */
    Expr shared(String name, Supplier<Expr> body) {
        Integer r = named.get(name);
        if (r == null) {
            r = newRule(name);
            named.put(name, r);
            define(r, body.get());
        }
        return new Expr.Ref(r);
    }

    /** A reference to a new rule with body {@code e} (keeps a large expression used twice from being copied). */
    Expr rule(String name, Expr e) {
        if (e instanceof Expr.Ref) return e;
        int r = newRule(name);
        define(r, e);
        return new Expr.Ref(r);
    }

    // ---- flattening ----

    private final IntBuffer kinds = new IntBuffer(), args = new IntBuffer();
    private final List<long[]> sets = new ArrayList<>();
    private final Map<String, Integer> setIndex = new HashMap<>();
    private final List<int[]> alternatives = new ArrayList<>();

    Grammar build(int root) {
        for (int r = 0; r < rules.size(); r++) if (rules.get(r) == null) throw new IllegalStateException("rule " + names.get(r) + " is undefined");
        // rules added while flattening (helpers) are flattened too: the list grows under the loop
        for (int r = 0; r < rules.size(); r++) {
            Expr e = rules.get(r);
            List<Expr> alts = e instanceof Expr.Alt a ? a.options() : List.of(e);
            int[] starts = new int[alts.size()];
            for (int i = 0; i < alts.size(); i++) starts[i] = emitAlternative(alts.get(i));
            alternatives.add(starts);
        }
        return new Grammar(kinds.toArray(), args.toArray(), sets.toArray(new long[0][]), alternatives.toArray(new int[0][]),
                names.toArray(new String[0]), root);
    }

    /** Writes one alternative (a sequence) and its END; returns its start position. */
    private int emitAlternative(Expr e) {
        List<Expr> flat = new ArrayList<>();
        flatten(e, flat);
        int start = kinds.size();
        for (Expr x : flat) {
            switch (x) {
                case Expr.ByteSet b -> {
                    kinds.add(Grammar.SET);
                    args.add(setIndex(b.set()));
                }
                case Expr.Ref ref -> {
                    kinds.add(Grammar.REF);
                    args.add(ref.rule());
                }
                default -> throw new IllegalStateException("not flat: " + x);
            }
        }
        kinds.add(Grammar.END);
        args.add(0);
        return start;
    }

    /** Sequences inline; alternatives and repetitions become references to helper rules. */
    private void flatten(Expr e, List<Expr> out) {
        switch (e) {
            case Expr.Seq s -> s.items().forEach(i -> flatten(i, out));
            case Expr.ByteSet b -> out.add(b);
            case Expr.Ref r -> out.add(r);
            case Expr.Alt a -> out.add(rule("alt", a));
            case Expr.Repeat rep -> repeat(rep, out);
        }
    }

    private void repeat(Expr.Repeat rep, List<Expr> out) {
        Expr item = rep.item() instanceof Expr.Alt || rep.item() instanceof Expr.Repeat ? rule("item", rep.item()) : rep.item();
        for (int i = 0; i < rep.min(); i++) flatten(item, out);
        if (rep.max() < 0) {
            // star ::= item star | ""
            int star = newRule("star");
            define(star, new Expr.Alt(List.of(Expr.seq(item, new Expr.Ref(star)), Expr.EMPTY)));
            out.add(new Expr.Ref(star));
            return;
        }
        // up to k more: opt_k ::= item opt_(k-1) | "", opt_1 ::= item | ""
        Expr tail = null;
        for (int k = 1; k <= rep.max() - rep.min(); k++) {
            int r = newRule("opt");
            define(r, new Expr.Alt(List.of(tail == null ? item : Expr.seq(item, tail), Expr.EMPTY)));
            tail = new Expr.Ref(r);
        }
        if (tail != null) out.add(tail);
    }

    private int setIndex(long[] s) {
        String key = Arrays.toString(s);
        Integer i = setIndex.get(key);
        if (i == null) {
            i = sets.size();
            sets.add(s.clone());
            setIndex.put(key, i);
        }
        return i;
    }

    private static final class IntBuffer {
        private int[] a = new int[256];
        private int n;

        void add(int v) {
            if (n == a.length) a = Arrays.copyOf(a, n * 2);
            a[n++] = v;
        }

        int size() {
            return n;
        }

        int[] toArray() {
            return Arrays.copyOf(a, n);
        }
    }
}
