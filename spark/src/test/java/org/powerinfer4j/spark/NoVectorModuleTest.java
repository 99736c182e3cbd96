package org.powerinfer4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** An executor JVM started without the engine's flags: one line naming them, not a NoClassDefFoundError from deep inside. */
class NoVectorModuleTest {

    /** Opens the test model as a task would, in a JVM without {@code --add-modules jdk.incubator.vector}. */
    public static void main(String[] args) {
        try {
            ExecutorModels.get(PowerInferGeneratorTest.generator().modelSpec());
            System.out.println("opened");
        } catch (RuntimeException e) {
            System.out.println(e.getMessage());
        }
    }

    @Test
    void aJvmWithoutTheVectorModuleIsToldWhichFlagsToAdd() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "-Xmx256m", "-Dpowerinfer4j.testdata=" + SparkTestSupport.TESTDATA, "-cp", System.getProperty("java.class.path"),
                NoVectorModuleTest.class.getName()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(out).isEqualTo("this JVM lacks the Vector API the engine computes with: add '--add-modules jdk.incubator.vector "
                + "--enable-native-access=ALL-UNNAMED' to spark.executor.extraJavaOptions and spark.driver.extraJavaOptions");
    }
}
