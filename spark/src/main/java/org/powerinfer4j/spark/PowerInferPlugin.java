package org.powerinfer4j.spark;

import java.util.Map;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * Closes the executor's models when the executor stops ({@code --conf spark.plugins=org.powerinfer4j.spark.PowerInferPlugin}):
 * their mappings, native memory and any GPU context go with the executor rather than at JVM exit. The driver side
 * does the same for local mode, where the driver runs the tasks.
 */
public final class PowerInferPlugin implements SparkPlugin {
    @Override
    public DriverPlugin driverPlugin() {
        return new DriverPlugin() {
            @Override
            public void shutdown() {
                ExecutorModels.closeAll();
            }
        };
    }

    @Override
    public ExecutorPlugin executorPlugin() {
        return new ExecutorPlugin() {
            @Override
            public void init(PluginContext ctx, Map<String, String> extraConf) {
                // models open lazily, when a task first needs one
            }

            @Override
            public void shutdown() {
                ExecutorModels.closeAll();
            }
        };
    }
}
