package org.powerinfer4j.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.hub.CachedModel;
import org.powerinfer4j.engine.hub.ModelCache;
import org.powerinfer4j.engine.hub.TerminalProgress;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code list}: the models in the local cache. */
@Command(name = "list", aliases = "ls", mixinStandardHelpOptions = true,
        description = {"List the models in the local cache (name, size, path).",
                "Any trailing part of a name that is unique (e.g. the file name) can be given to -m and rm."})
public final class ListCommand implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--cache-dir", paramLabel = "DIR", description = "Model cache (default: as for pull).")
    Path cacheDir;

    @Override
    public Integer call() throws Exception {
        ModelCache cache = cacheDir != null ? new ModelCache(cacheDir) : ModelCache.atDefaultLocation();
        List<CachedModel> models = cache.list();
        PrintWriter out = spec.commandLine().getOut();
        if (models.isEmpty()) {
            PrintWriter err = spec.commandLine().getErr();
            err.println("no models cached in " + cache.root());
            err.flush();
            return 0;
        }
        int nameWidth = Math.max(4, models.stream().mapToInt(m -> m.name().length()).max().orElse(0));
        String row = "%-" + nameWidth + "s  %-20s  %s%n";
        out.printf(row, "NAME", "SIZE", "PATH");
        for (CachedModel m : models) {
            String size = TerminalProgress.formatBytes(m.size()) + (m.complete() ? "" : " (partial)");
            out.printf(row, m.name(), size, m.complete() ? m.path() : m.path() + ModelCache.PART_SUFFIX);
        }
        out.flush();
        return 0;
    }
}
