package org.powerinfer4j.cli;

import org.powerinfer4j.engine.api.Model;

/** {@link Model#warmUp} on a daemon thread, for commands that wait for the user before the first request ({@code chat}). */
final class BackgroundWarmUp {
    private BackgroundWarmUp() {}

    static Thread start(Model model) {
        return Thread.ofPlatform().daemon().name("warm-up").start(() -> {
            try {
                model.warmUp();   // a request typed meanwhile runs beside it: sessions on one model are independent
            } catch (RuntimeException e) {
                // the model was closed (the user quit at once) or failed; a real request reports real errors itself
            }
        });
    }
}
