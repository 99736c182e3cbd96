package org.powerinfer4j.engine.hub;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ModelRefAndConfigTest {
    @Test
    void parsesRepoAndFileWithFolders() {
        assertThat(ModelRef.parse("acme/m-GGUF", null)).isEqualTo(new ModelRef("acme/m-GGUF", null, "main"));
        assertThat(ModelRef.parse("acme/m-GGUF/q/m-Q4_K_M.gguf", "v1")).isEqualTo(new ModelRef("acme/m-GGUF", "q/m-Q4_K_M.gguf", "v1"));
        assertThat(ModelRef.parse("acme/m-GGUF/m.gguf", "main").name()).isEqualTo("acme/m-GGUF/m.gguf");
    }

    @Test
    void parsesHubWebAddressesWithTheirRevision() {
        assertThat(ModelRef.parse("https://huggingface.co/acme/m-GGUF/blob/dev/m.gguf", "main"))
                .isEqualTo(new ModelRef("acme/m-GGUF", "m.gguf", "dev"));
        assertThat(ModelRef.parse("hf.co/acme/m-GGUF/resolve/main/m.gguf", "x")).isEqualTo(new ModelRef("acme/m-GGUF", "m.gguf", "main"));
        assertThat(ModelRef.parse("https://huggingface.co/acme/m-GGUF", "main")).isEqualTo(new ModelRef("acme/m-GGUF", null, "main"));
    }

    @Test
    void rejectsNamesThatCouldEscapeTheCache() {
        assertThatThrownBy(() -> ModelRef.parse("acme", "main")).hasMessageContaining("OWNER/REPO");
        assertThatThrownBy(() -> ModelRef.parse("acme/m/../../x.gguf", "main")).hasMessageContaining("invalid file name");
        assertThatThrownBy(() -> ModelRef.parse("../m/x.gguf", "main")).hasMessageContaining("invalid repository name");
    }

    @Test
    void configComesFromTheEnvironmentMap() {
        HubConfig d = HubConfig.from(Map.of());
        assertThat(d.endpoint()).isEqualTo(URI.create("https://huggingface.co"));
        assertThat(d.token()).isNull();
        HubConfig c = HubConfig.from(Map.of("HF_ENDPOINT", "http://127.0.0.1:9/", "HF_TOKEN", "hf_x"));
        assertThat(c.endpoint()).isEqualTo(URI.create("http://127.0.0.1:9"));
        assertThat(c.token()).isEqualTo("hf_x");
        assertThat(HubConfig.from(Map.of("HUGGING_FACE_HUB_TOKEN", "hf_old")).token()).isEqualTo("hf_old");
        assertThatThrownBy(() -> HubConfig.from(Map.of("HF_ENDPOINT", "ftp://x"))).hasMessageContaining("http(s)");
    }

    @Test
    void progressLineShowsPercentBytesRateAndEta() {
        // 1 MB of 4 MB received in 1 s after resuming at 1 MB: 1 MB/s, 2 MB left → ETA 0:02
        String line = TerminalProgress.render("acme/m/m.gguf", 1_000_000, 2_000_000, 4_000_000, 1_000_000_000L);
        assertThat(line).contains(" 50% [").contains("2.00 MB / 4.00 MB").contains("1.0 MB/s").contains("ETA 0:02");
        assertThat(TerminalProgress.render("x", 0, 1500, -1, 1_000_000_000L)).contains("1.50 kB").doesNotContain("ETA");
        assertThat(TerminalProgress.formatBytes(4_070_000_000L)).isEqualTo("4.07 GB");
        assertThat(TerminalProgress.formatDuration(3_723_000_000_000L)).isEqualTo("1:02:03");
    }

    @Test
    void progressDrawsInPlaceOnlyWhenLive() {
        java.io.StringWriter live = new java.io.StringWriter(), log = new java.io.StringWriter();
        long[] now = {0};
        for (var sw : new java.io.StringWriter[]{live, log}) {
            TerminalProgress p = new TerminalProgress(new java.io.PrintWriter(sw), sw == live, () -> now[0]);
            p.start("m.gguf", 0, 100);
            now[0] += 200_000_000L;
            p.advance(50);
            p.message("retrying");
            p.stop();
        }
        assertThat(live.toString()).contains("\r").contains(" 50% [").contains("retrying\n");
        assertThat(log.toString()).isEqualTo("retrying" + System.lineSeparator());
    }

    /** Load, profile and train-predictors use the same bar: counts of a unit, and nothing at all for a task that ends quickly. */
    @Test
    void progressCountsUnitsAndShowsOnlyLongTasks() {
        assertThat(TerminalProgress.render("profile", 0, 512, 1024, 1_000_000_000L, "tok")).contains(" 50% [").contains("512 tok / 1,024 tok")
                .contains("512 tok/s");
        long[] now = {0};
        java.io.StringWriter quick = new java.io.StringWriter(), slow = new java.io.StringWriter(), log = new java.io.StringWriter();
        for (var sw : new java.io.StringWriter[]{quick, slow, log}) {
            TerminalProgress p = new TerminalProgress(new java.io.PrintWriter(sw), sw != log, () -> now[0]).showingAfter(1_000_000_000L);
            now[0] = 0;
            p.start("repacking", 0, 100);
            now[0] = sw == quick ? 300_000_000L : 1_500_000_000L;
            p.advance(100);
            p.stop();
        }
        assertThat(quick.toString()).isEmpty();
        assertThat(slow.toString()).contains("\r").contains("100% [");
        assertThat(log.toString()).isEqualTo("repacking: 100 B in 0:02" + System.lineSeparator());
    }
}
