package org.powerinfer4j.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.hub.CachedModel;
import org.powerinfer4j.engine.hub.ModelCache;
import org.powerinfer4j.engine.hub.TerminalProgress;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code rm}: delete one model (or interrupted download) from the local cache. */
@Command(name = "rm", mixinStandardHelpOptions = true,
        description = "Delete a cached model and its metadata. NAME is as shown by list, or a unique trailing part of it.")
public final class RmCommand implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(paramLabel = "NAME", description = "OWNER/REPO/FILE, REPO/FILE, FILE, or OWNER/REPO of a repository with one cached file.")
    String name;

    @Option(names = "--cache-dir", paramLabel = "DIR", description = "Model cache (default: as for pull).")
    Path cacheDir;

    @Override
    public Integer call() throws Exception {
        ModelCache cache = cacheDir != null ? new ModelCache(cacheDir) : ModelCache.atDefaultLocation();
        CachedModel removed = cache.remove(name);
        PrintWriter out = spec.commandLine().getOut();
        out.println("removed " + removed.name() + " (" + TerminalProgress.formatBytes(removed.size()) + (removed.complete() ? "" : ", partial") + ")");
        out.flush();
        return 0;
    }
}
