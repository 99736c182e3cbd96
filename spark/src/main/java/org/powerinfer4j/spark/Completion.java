package org.powerinfer4j.spark;

import java.io.Serializable;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * One row's outcome: the generated text and its token counts, or the reason it could not be generated.
 *
 * @param text             the completion (stop sequences removed); null when {@code error} is set
 * @param promptTokens     tokens of the prompt as evaluated (with BOS, after the chat template); null on error
 * @param completionTokens tokens generated, the end-of-generation token not counted (as in the OpenAI API); null on error
 * @param finishReason     {@code stop} (end of generation or a stop sequence), {@code length} (max tokens or a full
 *                         context); null on error
 * @param error            one line saying why the row has no completion; null when it has one
 */
public record Completion(String text, Integer promptTokens, Integer completionTokens, String finishReason, String error) implements Serializable {

    static Completion failed(String message) {
        return new Completion(null, null, null, null, message);
    }

    /** The SQL function's result type: a struct of these fields, in this order. */
    public static StructType structType() {
        return new StructType(new StructField[] {
                DataTypes.createStructField("completion", DataTypes.StringType, true),
                DataTypes.createStructField("prompt_tokens", DataTypes.IntegerType, true),
                DataTypes.createStructField("completion_tokens", DataTypes.IntegerType, true),
                DataTypes.createStructField("finish_reason", DataTypes.StringType, true),
                DataTypes.createStructField("error", DataTypes.StringType, true)});
    }

    Object[] values() {
        return new Object[] {text, promptTokens, completionTokens, finishReason, error};
    }
}
