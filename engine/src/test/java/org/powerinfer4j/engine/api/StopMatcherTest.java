package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class StopMatcherTest {
    /** Feeds pieces and returns everything emitted, including the final flush. */
    private static String run(StopMatcher m, String... pieces) {
        StringBuilder out = new StringBuilder();
        for (String p : pieces) out.append(m.accept(p));
        return out.append(m.flush()).toString();
    }

    @Test
    void withoutStopSequencesEverythingPassesAtOnce() {
        StopMatcher m = new StopMatcher(List.of());
        assertThat(m.accept("hello")).isEqualTo("hello");
        assertThat(m.flush()).isEmpty();
        assertThat(m.stopped()).isFalse();
    }

    @Test
    void stopInsideOnePieceCutsBeforeIt() {
        StopMatcher m = new StopMatcher(List.of("END"));
        assertThat(run(m, "abcENDdef", "more")).isEqualTo("abc");
        assertThat(m.stopped()).isTrue();
    }

    @Test
    void stopSplitAcrossPiecesIsHeldBackAndNeverEmitted() {
        StopMatcher m = new StopMatcher(List.of("little girl"));
        assertThat(m.accept(" a lit")).isEqualTo(" a "); // "lit" might start the stop sequence
        assertThat(m.accept("tle")).isEmpty();
        assertThat(m.accept(" gi")).isEmpty();
        assertThat(m.accept("rl named")).isEmpty();
        assertThat(m.stopped()).isTrue();
        assertThat(m.flush()).isEmpty();
    }

    @Test
    void heldTextIsReleasedWhenItStopsMatching() {
        StopMatcher m = new StopMatcher(List.of("little girl"));
        assertThat(m.accept("a lit")).isEqualTo("a ");
        assertThat(m.accept("tle boy")).isEqualTo("little boy");
        assertThat(m.stopped()).isFalse();
    }

    @Test
    void textHeldAtTheEndIsFlushed() {
        StopMatcher m = new StopMatcher(List.of("\n\n"));
        assertThat(run(m, "one", "\n")).isEqualTo("one\n");
        assertThat(m.stopped()).isFalse();
    }

    @Test
    void earliestOfSeveralStopsWins() {
        StopMatcher m = new StopMatcher(List.of("girl", "was"));
        assertThat(run(m, "there was a girl")).isEqualTo("there ");
    }

    @Test
    void overlappingPrefixesAreFoundAtTheRightOffset() {
        StopMatcher m = new StopMatcher(List.of("aab"));
        assertThat(run(m, "xa", "a", "a", "b", "tail")).isEqualTo("xa");
    }

    @Test
    void emptyStopStringsAreIgnored() {
        StopMatcher m = new StopMatcher(List.of(""));
        assertThat(run(m, "abc")).isEqualTo("abc");
        assertThat(m.stopped()).isFalse();
    }

    @Test
    void nothingAfterTheStop() {
        StopMatcher m = new StopMatcher(List.of("."));
        assertThat(m.accept("Hi. There")).isEqualTo("Hi");
        assertThat(m.accept("more. text")).isEmpty();
        assertThat(m.flush()).isEmpty();
    }
}
