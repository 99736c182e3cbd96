package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.model.ModelException;

/**
 * A model file that changes on disk while it is mapped (#17). Truncating it (or rewriting it in place, which
 * truncates first) would make the next read of a lost page fault: the Vector API's compiled loads crash the JVM
 * on that SIGBUS, so every pass first checks the file's size and fails with a one-line error instead. Replacing it
 * by renaming a new file over the path leaves the loaded model untouched.
 */
class ModelFileChangedTest {
    private static final ModelOptions OPTIONS = ModelOptions.defaults().withThreads(1).withContextLength(32).withListener(ModelListener.SILENT);

    @Test
    void truncatedWhileLoadedIsAOneLineErrorNotACrash(@TempDir Path dir) throws Exception {
        Path p = Files.copy(TestData.file("models/stories260K.gguf"), dir.resolve("model.gguf"));
        try (Model m = Model.open(p, OPTIONS); Session s = m.newSession()) {
            s.evaluate(1);
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
                ch.truncate(ch.size() / 2);
            }
            assertThatThrownBy(() -> s.evaluate(2)).isInstanceOf(ModelException.class)
                    .hasMessageContaining("model.gguf was truncated or rewritten on disk while loaded")
                    .hasMessageContaining(Files.size(p) + " now").hasMessageNotContaining("\n");
            // a new session fails the same way; closing still works
            try (Session again = m.newSession()) {
                assertThatThrownBy(() -> again.evaluate(1)).isInstanceOf(ModelException.class).hasMessageContaining("truncated");
            }
        }
    }

    @Test
    void replacedByRenameKeepsServingTheLoadedFile(@TempDir Path dir) throws Exception {
        Path p = Files.copy(TestData.file("models/stories260K.gguf"), dir.resolve("model.gguf"));
        try (Model m = Model.open(p, OPTIONS)) {
            float[] before;
            try (Session s = m.newSession()) {
                before = s.evaluate(1, 2, 3);
            }
            Path fresh = Files.copy(TestData.file("models/quantized/stories260K-q8_0.gguf"), dir.resolve("new.gguf"));
            Files.move(fresh, p, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            try (Session s = m.newSession()) {
                assertThat(s.evaluate(1, 2, 3)).containsExactly(before);
            }
        }
    }
}
