package org.powerinfer4j.cli;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.placement.ActivationStats;
import org.powerinfer4j.engine.backend.HybridSetup;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.model.ModelWeights;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code plan}: hot/cold neuron placement under a VRAM budget, written as PowerInfer's .gpuidx. */
@Command(name = "plan", mixinStandardHelpOptions = true,
        description = {"Plan what --gpu ... --vram-budget puts on the device: the attention blocks (weights, F32 KV cache,",
                "session buffers) that fit, then the hybrid FFN (workspace, predictors, hot rows) with the most frequently",
                "firing FFN neurons in the rest. Prints the device footprint the runtime allocates, allocation by",
                "allocation totalled per category, and writes PowerInfer's GPU index (PWRI, generic.gpu_index). Mixture-of-experts",
                "models are planned per routed expert (hot experts and hot neurons within experts; the index's expert layers",
                "are our extension, [n_ff, n_expert] masks).",
                "Example: plan -m model.powerinfer.gguf --vram-budget 4 --activations model.activations.gguf -c 2048"})
public final class PlanCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = {"-m", "--model"}, required = true, paramLabel = "MODEL", description = "GGUF or PowerInfer model file.")
    Path model;

    @Option(names = "--vram-budget", required = true, paramLabel = "GiB", description = "VRAM to use, in GiB (fractions allowed).")
    double budgetGiB;

    @Option(names = "--activations", paramLabel = "FILE", split = ",",
            description = "Activation statistics: a profile side file, .npy, text, JSON, a directory of per-layer files, or a list of per-layer files "
                    + "(default: MODEL with .activations.gguf).")
    List<Path> activations;

    @Option(names = {"-c", "--ctx-size"}, paramLabel = "N", defaultValue = "0",
            description = "Context length the KV cache is sized for (default: the model's, capped at " + ModelOptions.DEFAULT_CONTEXT_CAP + ").")
    int context;

    @Option(names = {"--kv-type", "-ctk", "--cache-type"}, paramLabel = "f16|f32", defaultValue = "f16",
            description = "KV cache element type, on the GPU as on the CPU: the run's -ctk (default ${DEFAULT-VALUE}, as generate's).")
    String kvType;

    @Option(names = {"-b", "--batch-size"}, paramLabel = "N", defaultValue = "64",
            description = "Tokens per forward chunk (generate's -b), sizing the hybrid FFN's workspace (default ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--tile", paramLabel = "N", defaultValue = "32", description = "Hot neurons per layer come in multiples of N (GPU kernel tile; default ${DEFAULT-VALUE}).")
    int tile;

    @Option(names = {"-o", "--output"}, paramLabel = "OUT.generated.gpuidx", description = "GPU index file (default: MODEL.generated.gpuidx).")
    Path output;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (!(budgetGiB >= 0) || budgetGiB > 1 << 20) throw new ParameterException(spec.commandLine(), "--vram-budget must be a non-negative number of GiB");
        if (tile < 1) throw new ParameterException(spec.commandLine(), "--tile must be >= 1");
        if (batch < 1) throw new ParameterException(spec.commandLine(), "--batch-size must be >= 1");
        GGMLType kv = switch (kvType.toLowerCase(Locale.ROOT)) {
            case "f16" -> GGMLType.F16;
            case "f32" -> GGMLType.F32;
            default -> throw new ParameterException(spec.commandLine(), "--kv-type must be f16 or f32, not " + kvType);
        };
        if (!Files.isRegularFile(model)) throw new java.nio.file.NoSuchFileException(model.toString());
        ActivationStats stats;
        if (activations == null || activations.isEmpty()) {
            Path def = ProfileCommand.sibling(model, ".activations.gguf");
            if (!Files.exists(def)) throw new ParameterException(spec.commandLine(), "no --activations given and " + def + " does not exist (run profile first)");
            stats = ActivationStats.read(def);
        } else stats = activations.size() == 1 ? ActivationStats.read(activations.get(0)) : ActivationStats.readLayers(activations);
        long budget = (long) Math.floor(budgetGiB * (1L << 30));
        try (GGUFFile f = GGUFFile.open(model)) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            ModelWeights w = ModelWeights.load(f, c);
            int ctx = context > 0 ? context : Math.min(c.trainedContext(), ModelOptions.DEFAULT_CONTEXT_CAP);
            // the runtime's own planning (HybridSetup.plan): what plan prints is what --gpu ... --vram-budget allocates
            HybridSetup.DevicePlan dp = HybridSetup.planFromProfile(c, w, ctx, batch, kv, budget, stats, tile, "plan");
            out.printf(Locale.ROOT, "model %s: ctx %d, KV %s, batch %d; %d of %d attention blocks on the GPU%n", model.getFileName(), ctx, kv, batch,
                    dp.attentionLayers(), c.layers());
            boolean predictors = java.util.Arrays.stream(dp.units().allWeights()).allMatch(l -> l.hasPredictor());
            if (!predictors) out.println("note: this model has no activation predictors; the hybrid runtime needs them (train-predictors)");
            if (dp.units().ofExperts())
                out.printf(Locale.ROOT, "mixture of experts: %d units (layer, routed expert), each placed from its own profile counts%n", dp.units().size());
            out.println("hot-neuron solver, on the FFN's share of the budget:");
            out.print(dp.placement().plan().table());
            out.println();
            out.print(dp.footprint().table());
            out.printf(Locale.ROOT, "VRAM budget %,d bytes, %,d free%n", budget, budget - dp.footprint().totalBytes());
            Path o = output != null ? output : model.resolveSibling(model.getFileName() + ".generated.gpuidx");
            dp.gpuIndex(budget).write(o);
            out.println("wrote " + o);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        out.flush();
        return 0;
    }
}
