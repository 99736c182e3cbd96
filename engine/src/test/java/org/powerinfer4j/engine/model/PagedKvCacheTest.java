package org.powerinfer4j.engine.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * {@link KvBlockPool} and paged {@link KVCache}s: every sequence reads back exactly the rows it wrote or took from
 * another, whatever mix of appends, rewrites (copy-on-write of shared blocks), truncations and prefix sharing ran;
 * blocks are counted once however many sequences share them, and all come back when the sequences close.
 */
class PagedKvCacheTest {
    private static final int LAYERS = 2, DIM = 3, CTX = 70, SEQS = 3;

    @Property(tries = 300)
    void sequencesReadBackWhatTheyHoldUnderAnyMixOfOperations(@ForAll long seed, @ForAll @IntRange(min = 1, max = 60) int ops) {
        SplittableRandom r = new SplittableRandom(seed);
        try (KvBlockPool pool = new KvBlockPool(LAYERS, DIM, GGMLType.F32, 16 * KvBlockPool.BLOCK_TOKENS)) {
            KVCache[] kv = new KVCache[SEQS];
            float[][][][] want = new float[SEQS][CTX][][];   // [seq][pos] -> [layer][key row ++ value row]; null: not held
            int[] len = new int[SEQS];                       // positions [0, len) written, in order
            for (int i = 0; i < SEQS; i++) kv[i] = KVCache.paged(pool, CTX);
            for (int op = 0; op < ops; op++) {
                int s = r.nextInt(SEQS);
                switch (r.nextInt(4)) {
                    case 0, 1 -> {   // append, or rewrite a held position (the first write into a shared block copies it)
                        if (len[s] == CTX) break;
                        int pos = len[s] > 0 && r.nextInt(3) == 0 ? r.nextInt(len[s]) : len[s];
                        kv[s].reserve(pos, pos + 1);
                        want[s][pos] = write(kv[s], pos, r);
                        if (pos == len[s]) len[s]++;
                    }
                    case 2 -> {
                        int to = r.nextInt(len[s] + 1);
                        kv[s].truncate(to);
                        len[s] = to;
                        for (int p = to; p < CTX; p++) want[s][p] = null;
                    }
                    default -> {     // take [from, to) of another sequence's prefix, sharing its whole blocks
                        int d = (s + 1 + r.nextInt(SEQS - 1)) % SEQS;
                        int to = r.nextInt(len[d] + 1), from = r.nextInt(Math.min(len[s], to) + 1);
                        for (int p = 0; p < from; p++) want[s][p] = want[d][p];   // the precondition: s agrees with d below from
                        rewriteBelow(kv[s], want[s], from);
                        int got = kv[s].shareRows(kv[d], from, to);
                        assertThat(got).isEqualTo(to);
                        for (int p = from; p < to; p++) want[s][p] = want[d][p];
                        len[s] = Math.max(len[s], to);   // rows past `to` (if any) stay its own
                    }
                }
                for (int i = 0; i < SEQS; i++) assertHolds(kv[i], want[i], len[i]);
                int held = 0;
                for (KVCache k : kv) held += k.heldBlocks();
                assertThat(pool.usedTokens()).isLessThanOrEqualTo(held * KvBlockPool.BLOCK_TOKENS);
            }
            for (KVCache k : kv) k.close();
            assertThat(pool.usedTokens()).as("blocks leaked").isZero();
        }
    }

    @Test
    void aSharedPrefixIsStoredOnceAndCopiedOnTheFirstWrite() {
        try (KvBlockPool pool = new KvBlockPool(LAYERS, DIM, GGMLType.F32, 8 * KvBlockPool.BLOCK_TOKENS);
             KVCache a = KVCache.paged(pool, CTX); KVCache b = KVCache.paged(pool, CTX)) {
            SplittableRandom r = new SplittableRandom(1);
            float[][][] rows = new float[CTX][][];
            a.reserve(0, 40);
            for (int p = 0; p < 40; p++) rows[p] = write(a, p, r);
            assertThat(pool.usedTokens()).isEqualTo(48);   // 3 blocks
            assertThat(b.shareRows(a, 0, 40)).isEqualTo(40);
            // two whole blocks shared, the third (positions 32..39) copied into b's own block
            assertThat(pool.usedTokens()).isEqualTo(64);
            assertHolds(b, rows, 40);
            a.reserve(5, 6);   // a rewrites a shared row: a gets its own copy of block 0, b keeps the original
            float[][] changed = write(a, 5, r);
            assertThat(pool.usedTokens()).isEqualTo(80);
            assertHolds(b, rows, 40);
            rows[5] = changed;
            assertHolds(a, rows, 40);
        }
    }

    @Test
    void aFullPoolTakesParkedSequencesFirstThenFailsWithOneLine() {
        try (KvBlockPool pool = new KvBlockPool(LAYERS, DIM, GGMLType.F16, 4 * KvBlockPool.BLOCK_TOKENS);
             KVCache a = KVCache.paged(pool, CTX); KVCache b = KVCache.paged(pool, CTX); KVCache c = KVCache.paged(pool, CTX)) {
            a.reserve(0, 32);
            b.reserve(0, 32);
            assertThatThrownBy(() -> c.reserve(0, 1)).isInstanceOf(KvCacheFullException.class)
                    .hasMessageContaining("all 64 tokens are in use").hasMessageNotContaining("\n");
            a.park();
            c.reserve(0, 20);   // takes a's blocks (a is parked); b's stay
            assertThat(a.evicted()).isTrue();
            assertThat(a.heldBlocks()).isZero();
            assertThat(b.heldBlocks()).isEqualTo(2);
            assertThat(a.resume()).as("the parked sequence learns it lost its rows").isTrue();
            assertThat(a.resume()).isFalse();
            b.park();
            assertThat(b.resume()).isFalse();   // parked and resumed with nothing taken: its rows are intact
        }
    }

    /** Writes random rows at {@code pos} in every layer; returns them. */
    private static float[][] write(KVCache kv, int pos, SplittableRandom r) {
        float[][] rows = new float[LAYERS][2 * DIM];
        for (int l = 0; l < LAYERS; l++) {
            for (int i = 0; i < 2 * DIM; i++) rows[l][i] = (float) r.nextDouble(-1, 1);
            kv.store(l, pos, rows[l], 0, rows[l], DIM);
        }
        return rows;
    }

    /** Makes the cache hold {@code want}'s rows below {@code from} (the test's stand-in for evaluating the same tokens). */
    private static void rewriteBelow(KVCache kv, float[][][] want, int from) {
        if (from == 0) return;
        kv.reserve(0, from);
        for (int p = 0; p < from; p++) for (int l = 0; l < LAYERS; l++) kv.store(l, p, want[p][l], 0, want[p][l], DIM);
    }

    private static void assertHolds(KVCache kv, float[][][] want, int len) {
        for (int p = 0; p < len; p++) {
            for (int l = 0; l < LAYERS; l++) {
                long o = kv.offset(l, p);
                for (int i = 0; i < DIM; i++) {
                    assertThat(kv.keys().get(ValueLayout.JAVA_FLOAT_UNALIGNED, o + 4L * i)).as("key %d of layer %d at %d", i, l, p).isEqualTo(want[p][l][i]);
                    assertThat(kv.values().get(ValueLayout.JAVA_FLOAT_UNALIGNED, o + 4L * i)).as("value %d of layer %d at %d", i, l, p).isEqualTo(want[p][l][DIM + i]);
                }
            }
        }
    }
}
