package org.powerinfer4j.cli;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.model.generator.ModelArch;
import org.powerinfer4j.engine.model.generator.ModelShape;
import org.powerinfer4j.engine.model.generator.PlantedSparsity;
import org.powerinfer4j.engine.model.generator.RandomModelGenerator;
import org.powerinfer4j.engine.tensor.GGMLType;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code generate-model}: writes a random-weight llama, Falcon or OPT GGUF for benchmarks and tests. */
@Command(name = "generate-model", mixinStandardHelpOptions = true,
        description = {"Write a llama, falcon or opt GGUF with random N(0, 0.02) weights (norms 1.0), every matrix in one type.",
                "The tokenizer is copied from a vocabulary GGUF; the model's vocabulary size follows it.",
                "With --sparse-relu: a PowerInfer (PWRI) ReGLU/dReLU model whose neurons fire with power-law rates at the requested",
                "mean sparsity, with predictors built from the same structure (falcon/opt: a non-gated ReLU FFN).",
                "Example: generate-model --preset 110m --type q8_0 --vocab-from vocab/ggml-vocab-llama-spm.gguf 110m-q8_0.gguf",
                "Example: generate-model --preset llama-7b --layers 4 --type q4_0 --sparse-relu --sparsity 0.9 relu-7b-l4.powerinfer.gguf",
                "Example: generate-model --preset falcon-7b --layers 2 --type q8_0 --sparse-relu relu-falcon-7b-l2.powerinfer.gguf",
                "Example: generate-model --preset mixtral-8x7b --layers 2 --type q4_0 --experts 8 --sparse-relu moe-relu-l2.powerinfer.gguf"})
public final class GenerateModelCommand implements Callable<Integer> {
    static final String DEFAULT_VOCAB = "vocab/ggml-vocab-llama-spm.gguf";

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "OUT", description = "output .gguf file")
    Path out;

    @Option(names = "--arch", paramLabel = "llama|falcon|opt",
            description = "architecture to write (default: the preset's, else llama)")
    String arch;

    @Option(names = "--preset", description = "shape preset: ${COMPLETION-CANDIDATES}; explicit options below override it",
            completionCandidates = Presets.class)
    String preset;

    @Option(names = "--dim", description = "embedding width (n_embd)")
    Integer dim;

    @Option(names = "--layers", description = "number of blocks")
    Integer layers;

    @Option(names = "--ff", description = "feed-forward width (n_ff)")
    Integer ff;

    @Option(names = "--heads", description = "attention heads")
    Integer heads;

    @Option(names = "--kv-heads", description = "key/value heads (default: --heads)")
    Integer kvHeads;

    @Option(names = "--ctx", description = "context length written to the file")
    Integer ctx;

    @Option(names = "--tied", negatable = true, description = "share token_embd as the output matrix (no output.weight)")
    Boolean tied;

    @Option(names = "--type", defaultValue = "q8_0",
            description = "matrix type: f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q5_k, q6_k (default ${DEFAULT-VALUE})")
    String type;

    @Option(names = "--vocab-from", paramLabel = "FILE",
            description = "GGUF whose tokenizer.* keys are copied (default: " + DEFAULT_VOCAB
                    + " under -Dpowerinfer4j.testdata, $POWERINFER4J_TESTDATA or a shared/testdata folder beside the working directory)")
    Path vocabFrom;

    @Option(names = "--seed", defaultValue = "42", description = "random seed (default ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--stddev", defaultValue = "0.02", description = "weight standard deviation (default ${DEFAULT-VALUE})")
    float stddev;

    @Option(names = {"-t", "--threads"}, description = "quantization threads (default: all cores)")
    Integer threads;

    @Option(names = "--name", description = "general.name (default: derived from shape and type)")
    String name;

    @Option(names = "--sparse-relu", description = "write a PowerInfer (PWRI) ReLU-family model with planted activation sparsity "
            + "and predictors (fc1/fc2, F16) that predict it")
    boolean sparseRelu;

    @Option(names = "--activation", paramLabel = "reglu|drelu", defaultValue = "reglu",
            description = "with --sparse-relu: reglu (llama architecture; falcon/opt: ReLU) or drelu (bamboo architecture, llama only); default ${DEFAULT-VALUE}")
    String activation;

    @Option(names = "--sparsity", defaultValue = "0.9", description = "with --sparse-relu: mean fraction of inactive FFN neurons per token (default ${DEFAULT-VALUE})")
    double sparsity;

    @Option(names = "--power-law-alpha", defaultValue = "1.0",
            description = "with --sparse-relu: exponent of the neurons' firing-rate power law, 0 = uniform (default ${DEFAULT-VALUE})")
    double alpha;

    @Option(names = "--predictor-hidden", paramLabel = "H",
            description = "with --sparse-relu: predictor hidden size (default: max(64, n_embd/32))")
    Integer predictorHidden;

    @Option(names = "--predictor-margin", defaultValue = "0.3",
            description = "with --sparse-relu: logit margin in units of a neuron's gate spread; higher = more recall, less precision (default ${DEFAULT-VALUE})")
    double predictorMargin;

    @Option(names = "--gate-noise", defaultValue = "0.25",
            description = "with --sparse-relu: share of each gate row the predictor cannot see (default ${DEFAULT-VALUE})")
    double gateNoise;

    @Option(names = "--experts", paramLabel = "N",
            description = "llama only: Mixtral-style mixture-of-experts FFNs with N experts (router + ffn_*_exps, as llama.cpp writes Mixtral); "
                    + "with --sparse-relu each expert gets its own planted power law and predictor (blk.N.fc1.E/fc2.E). Default: 8 for --preset mixtral-8x7b, else a dense FFN")
    Integer expertsOption;

    @Option(names = "--experts-used", paramLabel = "K", defaultValue = "2", description = "with --experts: experts per token (default ${DEFAULT-VALUE})")
    int expertsUsed;

    static final class Presets implements Iterable<String> {
        @Override
        public java.util.Iterator<String> iterator() {
            return ModelShape.PRESETS.iterator();
        }
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        PrintWriter outw = spec.commandLine().getOut();
        ModelShape shape = shape();
        ModelArch a = architecture();
        int experts = expertsOption != null ? expertsOption : "mixtral-8x7b".equalsIgnoreCase(preset) ? 8 : 0;
        GGMLType t = parseType(type);
        Path vocab = vocabFrom != null ? vocabFrom : defaultVocab();
        if (!Files.isRegularFile(vocab)) throw new ParameterException(spec.commandLine(), "vocabulary file not found: " + vocab);
        RandomModelGenerator g = new RandomModelGenerator(shape, t, vocab).seed(seed).stddev(stddev);
        if (threads != null) g.threads(threads);
        PlantedSparsity.Spec spec = sparseRelu ? sparseSpec() : null;
        try {
            g.architecture(a).sparseRelu(spec).experts(experts, expertsUsed);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(this.spec.commandLine(), e.getMessage());
        }
        if (name != null) g.name(name);
        else if (preset != null && dim == null && layers == null && ff == null && heads == null && kvHeads == null
                && ModelShape.presetArch(preset) == a)
            g.name("random-" + preset + (spec != null ? "-" + a.sparseLabel(spec.activation()) : "")
                    + (experts > 0 ? "-moe" + experts + "x" + expertsUsed : "") + "-" + t.name().toLowerCase(Locale.ROOT));
        err.printf("generating %s %s%s, %s, vocabulary %d from %s, seed %d -> %s%n", a.ggufName(), shape,
                experts > 0 ? ", " + experts + " experts (" + expertsUsed + " per token)" : "", t, g.vocabSize(), vocab, seed, out);
        if (spec != null)
            err.printf(Locale.ROOT, "  PowerInfer %s model: sparsity %.2f, power-law alpha %.2f, predictor hidden %d, gate noise %.2f, margin %.2f%n",
                    a.sparseLabel(spec.activation()), spec.sparsity(), spec.alpha(), spec.hidden(shape.dim()),
                    spec.gateNoise(), spec.predictorMargin());
        err.flush();
        RandomModelGenerator.Result r = g.write(out);
        outw.printf(Locale.ROOT, "wrote %s: %,d bytes, %,d parameters, %.1f s%n", r.path(), r.bytes(), r.parameters(), r.seconds());
        outw.flush();
        return 0;
    }

    /** --arch, else the preset's architecture, else llama. */
    private ModelArch architecture() {
        try {
            return arch != null ? ModelArch.parse(arch) : preset != null ? ModelShape.presetArch(preset) : ModelArch.LLAMA;
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage().replace("unknown architecture", "unknown --arch"));
        }
    }

    private PlantedSparsity.Spec sparseSpec() {
        try {
            FfnActivation a = FfnActivation.parse(activation);
            return PlantedSparsity.Spec.defaults().withActivation(a).withSparsity(sparsity).withAlpha(alpha)
                    .withPredictorHidden(predictorHidden == null ? 0 : predictorHidden).withGateNoise(gateNoise)
                    .withPredictorMargin(predictorMargin);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    private ModelShape shape() {
        ModelShape base = preset != null ? preset(preset) : null;
        if (base == null && (dim == null || layers == null || ff == null || heads == null))
            throw new ParameterException(spec.commandLine(), "give --preset or all of --dim, --layers, --ff, --heads");
        try {
            int h = heads != null ? heads : base.heads();
            int kv = kvHeads != null ? kvHeads : heads != null ? heads : base.kvHeads();
            ModelShape s = new ModelShape(dim != null ? dim : base.dim(), layers != null ? layers : base.layers(),
                    ff != null ? ff : base.ff(), h, kv, tied != null ? tied : base == null || base.tiedEmbeddings(),
                    ctx != null ? ctx : base != null ? base.contextLength() : 2048,
                    base != null ? base.ropeFreqBase() : 10000f, base != null ? base.rmsEps() : 1e-5f);
            return s;
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    private ModelShape preset(String p) {
        try {
            return ModelShape.preset(p);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    private GGMLType parseType(String s) {
        GGMLType t;
        try {
            t = GGMLType.valueOf(s.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            t = null;
        }
        if (t == null || !org.powerinfer4j.engine.tensor.Quantizer.supports(t))
            throw new ParameterException(spec.commandLine(), "unsupported --type '" + s + "' (f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q5_k, q6_k)");
        return t;
    }

    /** The Llama-2 SentencePiece vocabulary from the project's test data, wherever that is found. */
    static Path defaultVocab() {
        String prop = System.getProperty("powerinfer4j.testdata");
        if (prop != null) return Path.of(prop).resolve(DEFAULT_VOCAB);
        String env = System.getenv("POWERINFER4J_TESTDATA");
        if (env != null) return Path.of(env).resolve(DEFAULT_VOCAB);
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path c = p.resolve("shared").resolve("testdata").resolve(DEFAULT_VOCAB);
            if (Files.isRegularFile(c)) return c;
            c = p.resolveSibling("shared").resolve("testdata").resolve(DEFAULT_VOCAB);
            if (Files.isRegularFile(c)) return c;
        }
        return Path.of(DEFAULT_VOCAB);
    }
}
