package org.powerinfer4j.cli;

import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.hub.HubClient;
import org.powerinfer4j.engine.hub.HubConfig;
import org.powerinfer4j.engine.hub.ModelCache;
import org.powerinfer4j.engine.hub.ModelRef;
import org.powerinfer4j.engine.hub.PullResult;
import org.powerinfer4j.engine.hub.TerminalProgress;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code pull}: download a GGUF file from the Hugging Face hub into the model cache; prints its path. */
@Command(name = "pull", mixinStandardHelpOptions = true,
        description = {"Download a GGUF model from the Hugging Face hub into the local cache and print its path.",
                "Interrupted downloads resume; the hub's SHA-256 is verified. Set HF_TOKEN for gated or private repositories."},
        footer = {"%nExamples:",
                "  powerinfer4j pull TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF/tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf",
                "  powerinfer4j pull bartowski/Llama-3.2-1B-Instruct-GGUF      (picks the Q4_K_M file)",
                "  powerinfer4j generate -m tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf -p 'Hello'"})
public final class PullCommand implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(paramLabel = "REPO[/FILE]",
            description = "OWNER/REPO, optionally followed by the file's path in the repository (or a hub web address). "
                    + "Without a file, the repository's only GGUF file, or its only Q4_K_M one, is pulled.")
    String model;

    @Option(names = "--revision", defaultValue = ModelRef.DEFAULT_REVISION, paramLabel = "REV",
            description = "Branch, tag or commit (default: ${DEFAULT-VALUE}).")
    String revision;

    @Option(names = "--cache-dir", paramLabel = "DIR",
            description = "Model cache (default: $POWERINFER4J_CACHE, else $XDG_CACHE_HOME/powerinfer4j, else ~/.cache/powerinfer4j).")
    Path cacheDir;

    @Option(names = "--endpoint", paramLabel = "URL", description = "Hub address (default: $HF_ENDPOINT, else " + HubConfig.DEFAULT_ENDPOINT + ").")
    URI endpoint;

    @Option(names = "--progress", description = "Draw the progress bar even when stderr is not a terminal.")
    boolean progress;

    @Option(names = "--retries", defaultValue = "4", paramLabel = "N", description = "Retries of transient failures, with backoff (default: ${DEFAULT-VALUE}).")
    int retries;

    @Override
    public Integer call() throws Exception {
        HubConfig config = HubConfig.fromEnvironment();
        if (endpoint != null) config = config.withEndpoint(endpoint);
        ModelCache cache = cacheDir != null ? new ModelCache(cacheDir) : ModelCache.atDefaultLocation();
        ModelRef ref = ModelRef.parse(model, revision);
        PrintWriter err = spec.commandLine().getErr();
        boolean live = progress || (System.console() != null && System.console().isTerminal());
        PullResult r;
        try (HubClient hub = HubClient.builder(config).maxAttempts(Math.max(0, retries) + 1).build()) {
            r = hub.pull(ref, cache, new TerminalProgress(err, live));
        }
        String size = TerminalProgress.formatBytes(r.model().size());
        if (r.alreadyCached()) {
            err.println("already cached: " + r.model().name() + " (" + size + ")");
        } else {
            double seconds = r.elapsedNanos() / 1e9;
            err.printf(Locale.ROOT, "pulled %s: %s in %s (%.1f MB/s%s)%n", r.model().name(), size, TerminalProgress.formatDuration(r.elapsedNanos()),
                    seconds > 0 ? r.bytesTransferred() / seconds / 1e6 : 0.0, r.resumed() ? ", resumed" : "");
        }
        err.flush();
        PrintWriter out = spec.commandLine().getOut();
        out.println(r.model().path()); // stdout carries only the path, for $(powerinfer4j pull …)
        out.flush();
        return 0;
    }
}
