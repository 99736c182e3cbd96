package org.powerinfer4j.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code eval}: feeds exactly the given token ids (no BOS, no tokenizer) and prints, per position, the most likely
 * next tokens with their log-probabilities over the full vocabulary — one JSON object a line. What tests use to
 * compare whole distributions against references, and users to compare quantizations.
 */
@Command(name = "eval", mixinStandardHelpOptions = true,
        description = "Feed token ids and print the top-K next-token log-probabilities after each position, one JSON object per line.")
public final class EvalCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin ModelOptionsMixin model;

    @Option(names = "--ids", required = true, split = ",", paramLabel = "ID,ID,...", description = "Token ids to feed, in order (no BOS is added).")
    List<String> ids;

    @Option(names = "--top", defaultValue = "5", paramLabel = "K", description = "Tokens per position (default: ${DEFAULT-VALUE}).")
    int top;

    @Override
    public Integer call() throws Exception {
        if (top < 1) throw new CommandLine.ParameterException(spec.commandLine(), "--top must be >= 1, is " + top);
        int[] tokens = new int[ids.size()];
        for (int i = 0; i < tokens.length; i++) {
            try {
                tokens[i] = Integer.parseInt(ids.get(i).trim());
            } catch (NumberFormatException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--ids: '" + ids.get(i) + "' is not a token id");
            }
        }
        if (tokens.length == 0) throw new CommandLine.ParameterException(spec.commandLine(), "--ids: no token ids given");
        ObjectMapper json = new ObjectMapper();
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        try (Model m = model.open(); Session s = m.newSession()) {
            if (tokens.length > m.contextLength())
                throw new org.powerinfer4j.engine.model.ModelException(tokens.length + " ids exceed the context of " + m.contextLength() + " (raise -c)");
            int k = Math.min(top, m.config().vocabSize());
            for (int p = 0; p < tokens.length; p++) {
                float[] logits = s.evaluate(tokens[p]);
                ObjectNode line = json.createObjectNode().put("pos", p);
                ArrayNode arr = line.putArray("top");
                double[] lp = logSoftmax(logits);
                for (int id : topK(lp, k)) arr.addArray().add(id).add(lp[id]);
                out.println(json.writeValueAsString(line));
            }
        }
        return 0;
    }

    /** Log-softmax in double over the whole vocabulary. */
    static double[] logSoftmax(float[] x) {
        double max = Double.NEGATIVE_INFINITY;
        for (float v : x) max = Math.max(max, v);
        double sum = 0;
        for (float v : x) sum += Math.exp(v - max);
        double lse = max + Math.log(sum);
        double[] r = new double[x.length];
        for (int i = 0; i < x.length; i++) r[i] = x[i] - lse;
        return r;
    }

    /** Indices of the k largest values, largest first (ties: lower id first). */
    static int[] topK(double[] x, int k) {
        int[] best = new int[k];
        java.util.Arrays.fill(best, -1);
        for (int i = 0; i < x.length; i++) {
            int j = k - 1;
            if (best[j] >= 0 && x[i] <= x[best[j]]) continue;
            while (j > 0 && (best[j - 1] < 0 || x[i] > x[best[j - 1]])) {
                best[j] = best[j - 1];
                j--;
            }
            best[j] = i;
        }
        return best;
    }
}
