package org.powerinfer4j.spark;

import java.util.Arrays;
import java.util.List;
import org.apache.spark.ml.Transformer;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.StringArrayParam;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.DefaultParamsWritable;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.IntegralType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A Spark ML {@link Transformer} that completes the prompts of a string column with a GGUF model, in every executor:
 * <pre>{@code
 * Dataset<Row> out = new PowerInferGenerator().setModelPath("/models/model.gguf")
 *         .setInputCol("prompt").setOutputCol("completion").setMaxTokens(128).setTemperature(0)
 *         .transform(prompts);
 * }</pre>
 * Appends the completion, its token counts, the finish reason and an error column (set, with a null completion, on a row
 * that cannot be generated; {@link #setFailOnError} fails the job instead). A row generates exactly what
 * {@code generate -p PROMPT -n maxTokens -s seed} (with the same sampler flags) prints, whatever else runs beside it.
 *
 * <p>Each executor opens the model once, lazily, and shares it with all its tasks ({@link ExecutorModels}); within a task
 * {@link #setStreams streams} rows generate at once, their decode steps batched into shared passes over the weights.
 * Params are the command line's: sampler flags, {@code -c -t -b --sparse --gpu -ngl --vram-budget ...}; saved and loaded
 * with the pipeline ({@code DefaultParamsWritable}).
 */
public final class PowerInferGenerator extends Transformer implements DefaultParamsWritable {
    private final String uid;
    private transient GenerationMetrics lastMetrics;

    private final Param<String> modelPath;
    private final Param<String> inputCol;
    private final Param<String> outputCol;
    private final Param<String> promptTokensCol;
    private final Param<String> completionTokensCol;
    private final Param<String> finishReasonCol;
    private final Param<String> errorCol;
    private final Param<String> seedCol;
    private final IntParam maxTokens;
    private final DoubleParam temperature;
    private final IntParam topK;
    private final DoubleParam topP;
    private final DoubleParam minP;
    private final DoubleParam repeatPenalty;
    private final IntParam repeatLastN;
    private final LongParam seed;
    private final StringArrayParam stop;
    private final BooleanParam chatTemplate;
    private final Param<String> systemPrompt;
    private final BooleanParam ignoreEos;
    private final BooleanParam failOnError;
    private final IntParam streams;
    private final IntParam threads;
    private final IntParam contextLength;
    private final IntParam batchSize;
    private final Param<String> ffnAct;
    private final Param<String> sparse;
    private final DoubleParam sparseThreshold;
    private final Param<String> cacheType;
    private final Param<String> gpu;
    private final DoubleParam vramBudget;
    private final IntParam gpuLayers;
    private final Param<String> gpuIndex;
    private final Param<String> decodeBatching;
    private final BooleanParam repack;

    public PowerInferGenerator() {
        this(Identifiable.randomUID("powerinfer"));
    }

    public PowerInferGenerator(String uid) {
        this.uid = uid;   // first: each param records its parent's uid when made
        modelPath = new Param<>(this, "modelPath", "GGUF file every executor can read, a file shipped with --files, or a cached model's name");
        inputCol = new Param<>(this, "inputCol", "prompt column (string)");
        outputCol = new Param<>(this, "outputCol", "completion column (string, null on error)");
        promptTokensCol = new Param<>(this, "promptTokensCol", "prompt token count column (int)");
        completionTokensCol = new Param<>(this, "completionTokensCol", "generated token count column (int)");
        finishReasonCol = new Param<>(this, "finishReasonCol", "finish reason column: stop or length");
        errorCol = new Param<>(this, "errorCol", "error column: why a row has no completion, else null");
        seedCol = new Param<>(this, "seedCol", "optional integral column with each row's sampler seed (empty: every row takes seed)");
        maxTokens = new IntParam(this, "maxTokens", "tokens to generate at most, -1 = until end of generation or a full context");
        temperature = new DoubleParam(this, "temperature", "sampling temperature, 0 = greedy");
        topK = new IntParam(this, "topK", "top-k, 0 = off");
        topP = new DoubleParam(this, "topP", "top-p, 1 = off");
        minP = new DoubleParam(this, "minP", "min-p, 0 = off");
        repeatPenalty = new DoubleParam(this, "repeatPenalty", "repetition penalty, 1 = off");
        repeatLastN = new IntParam(this, "repeatLastN", "tokens the repetition penalty looks back over");
        seed = new LongParam(this, "seed", "sampler seed of rows without their own (fixed, so retried tasks repeat their rows)");
        stop = new StringArrayParam(this, "stop", "stop sequences (not included in the completion)");
        chatTemplate = new BooleanParam(this, "chatTemplate", "render the prompt as a user message with the model's chat template");
        systemPrompt = new Param<>(this, "systemPrompt", "system message before the prompt, with chatTemplate (empty: none)");
        ignoreEos = new BooleanParam(this, "ignoreEos", "keep generating past end-of-generation tokens");
        failOnError = new BooleanParam(this, "failOnError", "a row that cannot be generated fails the job instead of setting errorCol");
        streams = new IntParam(this, "streams", "rows generating at once in each task (their decode steps share passes)");
        threads = new IntParam(this, "threads", "compute threads per executor model, 0 = the executor's cores");
        contextLength = new IntParam(this, "contextLength", "context length per row, 0 = the model's (capped at 4096)");
        batchSize = new IntParam(this, "batchSize", "prompt tokens per forward chunk");
        ffnAct = new Param<>(this, "ffnAct", "FFN activation override: silu, relu, drelu, gelu, gelu_tanh (empty: the file's)");
        sparse = new Param<>(this, "sparse", "FFN sparsity: off, exact, predict (empty: from the file)");
        sparseThreshold = new DoubleParam(this, "sparseThreshold", "predictor threshold (NaN: the file's)");
        cacheType = new Param<>(this, "cacheType", "KV cache type: f16 or f32");
        gpu = new Param<>(this, "gpu", "auto, off, cuda or simulated (empty: auto when vramBudget, gpuIndex or gpuLayers is set)");
        vramBudget = new DoubleParam(this, "vramBudget", "device memory per executor in GiB, -1 = unset");
        gpuLayers = new IntParam(this, "gpuLayers", "dense models: layers on the GPU, as -ngl");
        gpuIndex = new Param<>(this, "gpuIndex", "PowerInfer .gpuidx naming the hot neurons (empty: none)");
        decodeBatching = new Param<>(this, "decodeBatching", "exact (rows independent of their neighbours), fast or off");
        repack = new BooleanParam(this, "repack", "repack Q4_0/Q4_K matrices at load for faster products");
        GenerationSpec g = GenerationSpec.defaults();
        setDefault(inputCol, "prompt");
        setDefault(outputCol, "completion");
        setDefault(promptTokensCol, "prompt_tokens");
        setDefault(completionTokensCol, "completion_tokens");
        setDefault(finishReasonCol, "finish_reason");
        setDefault(errorCol, "error");
        setDefault(seedCol, "");
        setDefault(maxTokens, g.maxTokens());
        setDefault(temperature, (double) g.temperature());
        setDefault(topK, g.topK());
        setDefault(topP, (double) g.topP());
        setDefault(minP, (double) g.minP());
        setDefault(repeatPenalty, (double) g.repeatPenalty());
        setDefault(repeatLastN, g.repeatLastN());
        setDefault(seed, g.seed());
        setDefault(stop, new String[0]);
        setDefault(chatTemplate, false);
        setDefault(systemPrompt, "");
        setDefault(ignoreEos, false);
        setDefault(failOnError, false);
        setDefault(streams, 4);
        setDefault(threads, 0);
        setDefault(contextLength, 0);
        setDefault(batchSize, 64);
        setDefault(ffnAct, "");
        setDefault(sparse, "");
        setDefault(sparseThreshold, Double.NaN);
        setDefault(cacheType, "f16");
        setDefault(gpu, "");
        setDefault(vramBudget, -1.0);
        setDefault(gpuLayers, 0);
        setDefault(gpuIndex, "");
        setDefault(decodeBatching, "exact");
        setDefault(repack, true);
    }

    @Override
    public String uid() {
        return uid;
    }

    /** The model and how each executor opens it, from this transformer's params (checked here, on the driver). */
    public ModelSpec modelSpec() {
        if (!isDefined(modelPath)) throw new IllegalArgumentException("modelPath is not set");
        return new ModelSpec(getModelPath(), (Integer) getOrDefault(threads), (Integer) getOrDefault(contextLength), (Integer) getOrDefault(batchSize),
                emptyToNull(getOrDefault(ffnAct)), emptyToNull(getOrDefault(sparse)), ((Double) getOrDefault(sparseThreshold)).floatValue(),
                getOrDefault(cacheType), emptyToNull(getOrDefault(gpu)), (Double) getOrDefault(vramBudget), (Integer) getOrDefault(gpuLayers),
                emptyToNull(getOrDefault(gpuIndex)), getOrDefault(decodeBatching), (Boolean) getOrDefault(repack));
    }

    /** How each row is generated, from this transformer's params. */
    public GenerationSpec generationSpec() {
        return new GenerationSpec(getMaxTokens(), (float) getTemperature(), (Integer) getOrDefault(topK), ((Double) getOrDefault(topP)).floatValue(),
                ((Double) getOrDefault(minP)).floatValue(), ((Double) getOrDefault(repeatPenalty)).floatValue(), (Integer) getOrDefault(repeatLastN),
                getSeed(), Arrays.asList(getOrDefault(stop)), getChatTemplate(), emptyToNull(getOrDefault(systemPrompt)), (Boolean) getOrDefault(ignoreEos));
    }

    @Override
    public Dataset<Row> transform(Dataset<?> dataset) {
        StructType in = dataset.schema(), out = transformSchema(in);
        String seedColumn = getOrDefault(seedCol);
        GenerationMetrics metrics = GenerationMetrics.register(dataset.sparkSession().sparkContext());
        lastMetrics = metrics;
        PartitionGenerator fn = new PartitionGenerator(modelSpec(), generationSpec(), in.fieldIndex(getInputCol()),
                seedColumn.isEmpty() ? -1 : in.fieldIndex(seedColumn), getStreams(), getFailOnError(), metrics);
        return dataset.toDF().mapPartitions(fn, Encoders.row(out));
    }

    @Override
    public StructType transformSchema(StructType schema) {
        requireColumn(schema, getInputCol(), "inputCol", DataTypes.StringType);
        String seedColumn = getOrDefault(seedCol);
        if (!seedColumn.isEmpty()) {
            DataType t = requireColumn(schema, seedColumn, "seedCol", null);
            if (!(t instanceof IntegralType)) throw new IllegalArgumentException("seedCol '" + seedColumn + "' must be an integral column, is " + t.simpleString());
        }
        List<StructField> added = outputFields();
        for (StructField f : added)
            if (Arrays.asList(schema.fieldNames()).contains(f.name()))
                throw new IllegalArgumentException("output column '" + f.name() + "' already exists in the input");
        StructType out = schema;
        for (StructField f : added) out = out.add(f);
        return out;
    }

    /** The appended columns: completion, prompt tokens, completion tokens, finish reason, error (in {@link Completion}'s order). */
    private List<StructField> outputFields() {
        List<StructField> base = Arrays.asList(Completion.structType().fields());
        String[] names = {getOutputCol(), getOrDefault(promptTokensCol), getOrDefault(completionTokensCol), getOrDefault(finishReasonCol), getOrDefault(errorCol)};
        List<String> distinct = Arrays.stream(names).distinct().toList();
        if (distinct.size() != names.length) throw new IllegalArgumentException("output column names must differ: " + String.join(", ", names));
        return java.util.stream.IntStream.range(0, names.length)
                .mapToObj(i -> DataTypes.createStructField(names[i], base.get(i).dataType(), true)).toList();
    }

    private static DataType requireColumn(StructType schema, String name, String param, DataType type) {
        if (!Arrays.asList(schema.fieldNames()).contains(name))
            throw new IllegalArgumentException(param + " '" + name + "' is not a column of the input (columns: " + String.join(", ", schema.fieldNames()) + ")");
        DataType t = schema.apply(name).dataType();
        if (type != null && !t.equals(type))
            throw new IllegalArgumentException(param + " '" + name + "' must be a " + type.simpleString() + " column, is " + t.simpleString());
        return t;
    }

    @Override
    public PowerInferGenerator copy(ParamMap extra) {
        return defaultCopy(extra);
    }

    /** The accumulators of the latest {@link #transform} (prompts done, rows failed, tokens), as the Spark UI shows them. */
    public GenerationMetrics lastMetrics() {
        return lastMetrics;
    }

    public static MLReader<PowerInferGenerator> read() {
        return new DefaultParamsReader<>();
    }

    public static PowerInferGenerator load(String path) {
        return read().load(path);
    }

    private static String emptyToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }

    // params, as Spark ML finds them (public no-argument methods returning a Param)
    public Param<String> modelPath() { return modelPath; }
    public Param<String> inputCol() { return inputCol; }
    public Param<String> outputCol() { return outputCol; }
    public Param<String> promptTokensCol() { return promptTokensCol; }
    public Param<String> completionTokensCol() { return completionTokensCol; }
    public Param<String> finishReasonCol() { return finishReasonCol; }
    public Param<String> errorCol() { return errorCol; }
    public Param<String> seedCol() { return seedCol; }
    public IntParam maxTokens() { return maxTokens; }
    public DoubleParam temperature() { return temperature; }
    public IntParam topK() { return topK; }
    public DoubleParam topP() { return topP; }
    public DoubleParam minP() { return minP; }
    public DoubleParam repeatPenalty() { return repeatPenalty; }
    public IntParam repeatLastN() { return repeatLastN; }
    public LongParam seed() { return seed; }
    public StringArrayParam stop() { return stop; }
    public BooleanParam chatTemplate() { return chatTemplate; }
    public Param<String> systemPrompt() { return systemPrompt; }
    public BooleanParam ignoreEos() { return ignoreEos; }
    public BooleanParam failOnError() { return failOnError; }
    public IntParam streams() { return streams; }
    public IntParam threads() { return threads; }
    public IntParam contextLength() { return contextLength; }
    public IntParam batchSize() { return batchSize; }
    public Param<String> ffnAct() { return ffnAct; }
    public Param<String> sparse() { return sparse; }
    public DoubleParam sparseThreshold() { return sparseThreshold; }
    public Param<String> cacheType() { return cacheType; }
    public Param<String> gpu() { return gpu; }
    public DoubleParam vramBudget() { return vramBudget; }
    public IntParam gpuLayers() { return gpuLayers; }
    public Param<String> gpuIndex() { return gpuIndex; }
    public Param<String> decodeBatching() { return decodeBatching; }
    public BooleanParam repack() { return repack; }

    // setters and the most used getters
    public PowerInferGenerator setModelPath(String v) { set(modelPath, v); return this; }
    public PowerInferGenerator setInputCol(String v) { set(inputCol, v); return this; }
    public PowerInferGenerator setOutputCol(String v) { set(outputCol, v); return this; }
    public PowerInferGenerator setPromptTokensCol(String v) { set(promptTokensCol, v); return this; }
    public PowerInferGenerator setCompletionTokensCol(String v) { set(completionTokensCol, v); return this; }
    public PowerInferGenerator setFinishReasonCol(String v) { set(finishReasonCol, v); return this; }
    public PowerInferGenerator setErrorCol(String v) { set(errorCol, v); return this; }
    public PowerInferGenerator setSeedCol(String v) { set(seedCol, v); return this; }
    public PowerInferGenerator setMaxTokens(int v) { set(maxTokens, v); return this; }
    public PowerInferGenerator setTemperature(double v) { set(temperature, v); return this; }
    public PowerInferGenerator setTopK(int v) { set(topK, v); return this; }
    public PowerInferGenerator setTopP(double v) { set(topP, v); return this; }
    public PowerInferGenerator setMinP(double v) { set(minP, v); return this; }
    public PowerInferGenerator setRepeatPenalty(double v) { set(repeatPenalty, v); return this; }
    public PowerInferGenerator setRepeatLastN(int v) { set(repeatLastN, v); return this; }
    public PowerInferGenerator setSeed(long v) { set(seed, v); return this; }
    public PowerInferGenerator setStop(String... v) { set(stop, v); return this; }
    public PowerInferGenerator setChatTemplate(boolean v) { set(chatTemplate, v); return this; }
    public PowerInferGenerator setSystemPrompt(String v) { set(systemPrompt, v); return this; }
    public PowerInferGenerator setIgnoreEos(boolean v) { set(ignoreEos, v); return this; }
    public PowerInferGenerator setFailOnError(boolean v) { set(failOnError, v); return this; }
    public PowerInferGenerator setStreams(int v) { set(streams, v); return this; }
    public PowerInferGenerator setThreads(int v) { set(threads, v); return this; }
    public PowerInferGenerator setContextLength(int v) { set(contextLength, v); return this; }
    public PowerInferGenerator setBatchSize(int v) { set(batchSize, v); return this; }
    public PowerInferGenerator setFfnAct(String v) { set(ffnAct, v); return this; }
    public PowerInferGenerator setSparse(String v) { set(sparse, v); return this; }
    public PowerInferGenerator setSparseThreshold(double v) { set(sparseThreshold, v); return this; }
    public PowerInferGenerator setCacheType(String v) { set(cacheType, v); return this; }
    public PowerInferGenerator setGpu(String v) { set(gpu, v); return this; }
    public PowerInferGenerator setVramBudget(double gib) { set(vramBudget, gib); return this; }
    public PowerInferGenerator setGpuLayers(int v) { set(gpuLayers, v); return this; }
    public PowerInferGenerator setGpuIndex(String v) { set(gpuIndex, v); return this; }
    public PowerInferGenerator setDecodeBatching(String v) { set(decodeBatching, v); return this; }
    public PowerInferGenerator setRepack(boolean v) { set(repack, v); return this; }

    public String getModelPath() { return getOrDefault(modelPath); }
    public String getInputCol() { return getOrDefault(inputCol); }
    public String getOutputCol() { return getOrDefault(outputCol); }
    public int getMaxTokens() { return (Integer) getOrDefault(maxTokens); }
    public double getTemperature() { return (Double) getOrDefault(temperature); }
    public long getSeed() { return (Long) getOrDefault(seed); }
    public boolean getChatTemplate() { return (Boolean) getOrDefault(chatTemplate); }
    public boolean getFailOnError() { return (Boolean) getOrDefault(failOnError); }
    public int getStreams() { return (Integer) getOrDefault(streams); }
}
