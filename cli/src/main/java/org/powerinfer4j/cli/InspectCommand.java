package org.powerinfer4j.cli;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.MetadataValue;
import org.powerinfer4j.engine.gguf.TensorInfo;
import org.powerinfer4j.engine.tensor.GGMLType;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code inspect}: metadata and tensor table of a GGUF file, like gguf-dump. */
@Command(name = "inspect", mixinStandardHelpOptions = true, description = "Print a GGUF file's metadata and tensors.")
public final class InspectCommand implements Callable<Integer> {
    @Parameters(paramLabel = "MODEL", description = "GGUF file or cached model name.")
    String model;

    @Option(names = "--max-array", defaultValue = "8", description = "Array items shown before summarising (default: ${DEFAULT-VALUE}).")
    int maxArray;

    @Option(names = "--no-tensors", description = "Only print metadata.")
    boolean noTensors;

    @Override
    public Integer call() throws Exception {
        Path path = org.powerinfer4j.engine.hub.ModelCache.resolve(model);
        try (GGUFFile f = GGUFFile.open(path)) {
            System.out.printf("%s: %s v%d, %,d bytes, alignment %d, data at %d%n", path.getFileName(), f.magicString(), f.version(),
                    f.fileSize(), f.alignment(), f.dataOffset());
            System.out.printf("* %d key/value pairs:%n", f.metadata().size());
            int i = 1;
            for (Map.Entry<String, MetadataValue> e : f.metadata().entrySet()) {
                MetadataValue v = e.getValue();
                String type = v.isArray() ? "[" + v.elementType().name().toLowerCase() + "]" : v.type().name().toLowerCase();
                System.out.printf("%5d: %-10s %-45s = %s%n", i++, type, e.getKey(), v.display(maxArray));
            }
            if (noTensors) return 0;
            System.out.printf("* %d tensors:%n", f.tensorInfos().size());
            long total = 0, params = 0;
            Map<GGMLType, Long> byType = new java.util.EnumMap<>(GGMLType.class);
            i = 1;
            for (TensorInfo t : f.tensorInfos()) {
                System.out.printf("%5d: %-32s %-7s %-22s offset %12d  %,14d B%n", i++, t.name(), t.type(), shape(t.ne()), t.offset(), t.byteSize());
                total += t.byteSize();
                params += t.elementCount();
                byType.merge(t.type(), t.byteSize(), Long::sum);
            }
            System.out.printf("* totals: %,d parameters, %,d bytes (%.2f MiB), %.2f bits/weight%n", params, total, total / 1048576.0,
                    params == 0 ? 0 : total * 8.0 / params);
            byType.forEach((t, b) -> System.out.printf("    %-7s %,14d B%n", t, b));
        }
        return 0;
    }

    private static String shape(long[] ne) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < ne.length; i++) sb.append(i > 0 ? ", " : "").append(ne[i]);
        return sb.append("]").toString();
    }
}
