package org.powerinfer4j.langchain4j;

import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.listener.ChatModelListener;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.chat.response.StreamingHandle;
import java.util.List;
import org.powerinfer4j.engine.api.Model;

/**
 * A LangChain4j {@link StreamingChatModel} on a PowerInfer4j {@link Model} in this JVM: the same request handling as
 * {@link PowerInferChatModel}, with {@code onPartialResponse} called for each piece of decoded text as it is generated
 * (never a partial UTF-8 character, never text of a stop sequence), then {@code onCompleteResponse} with the whole
 * answer, its token usage and finish reason. With tools the answer is read at its end: {@code onCompleteToolCall} per
 * call (or one {@code onPartialResponse} with the content), then {@code onCompleteResponse}.
 *
 * <p>The generation runs on the calling thread: {@code chat(request, handler)} returns after the handler's last
 * callback (run it on another thread, e.g. a virtual thread, to continue meanwhile). Every failure — a refused
 * parameter, a prompt longer than the context, an exception thrown by the handler — ends the stream with one
 * {@code onError} and no {@code onCompleteResponse}. {@link StreamingHandle#cancel()} (from the partial response's
 * context) stops the generation at the next token, after which no callback is made.
 */
public final class PowerInferStreamingChatModel extends InProcessModel.Chat implements StreamingChatModel {
    private PowerInferStreamingChatModel(InProcessGenerator generator, List<ChatModelListener> listeners) {
        super(generator, listeners);
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
        InProcessGenerator.Generation g;
        EngineRequest.Call call;
        Cancellation cancellation = new Cancellation();
        PartialResponseContext context = new PartialResponseContext(cancellation);
        try {
            call = EngineRequest.translate(request, generator).prepare(generator);
            boolean toolCalls = call.toolCalls();
            g = generator.generate(call.prompt(), call.params(), call.stopSequences(), new InProcessGenerator.TextSink() {
                @Override
                public void accept(String text) {
                    // with tools, whether the answer is a call or content is known at its end only
                    if (!toolCalls) handler.onPartialResponse(new PartialResponse(text), context);
                }

                @Override
                public boolean cancelled() {
                    return cancellation.isCancelled();
                }
            });
        } catch (RuntimeException | Error e) {
            if (!cancellation.isCancelled()) handler.onError(e);
            return;
        }
        if (g.cancelled()) return;
        ChatResponse response = response(g, call.toolCalls());
        try {
            if (call.toolCalls()) {
                var requests = response.aiMessage().toolExecutionRequests();
                for (int i = 0; i < requests.size(); i++) handler.onCompleteToolCall(new CompleteToolCall(i, requests.get(i)));
                if (requests.isEmpty() && !response.aiMessage().text().isEmpty())
                    handler.onPartialResponse(new PartialResponse(response.aiMessage().text()), context);
            }
            handler.onCompleteResponse(response);
        } catch (RuntimeException e) {
            handler.onError(e);
        }
    }

    /** The caller's cancel switch, polled after every generated token. */
    private static final class Cancellation implements StreamingHandle {
        private volatile boolean cancelled;

        @Override
        public void cancel() {
            cancelled = true;
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }
    }

    /** Builds a {@link PowerInferStreamingChatModel}; the settings are {@link PowerInferBuilder}'s plus LangChain4j listeners. */
    public static final class Builder extends InProcessModel.Chat.Builder<Builder> {
        private Builder() {}

        public PowerInferStreamingChatModel build() {
            return new PowerInferStreamingChatModel(generator(), listeners);
        }
    }
}
