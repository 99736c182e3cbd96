package org.powerinfer4j.bindings.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import org.junit.jupiter.api.Test;

class CudaResultTest {
    @Test
    void tableMapsCommonCodes() {
        assertThat(CudaResult.tableName(0)).isEqualTo("CUDA_SUCCESS");
        assertThat(CudaResult.tableName(1)).isEqualTo("CUDA_ERROR_INVALID_VALUE");
        assertThat(CudaResult.tableName(2)).isEqualTo("CUDA_ERROR_OUT_OF_MEMORY");
        assertThat(CudaResult.tableName(3)).isEqualTo("CUDA_ERROR_NOT_INITIALIZED");
        assertThat(CudaResult.tableName(34)).isEqualTo("CUDA_ERROR_STUB_LIBRARY");
        assertThat(CudaResult.tableName(35)).isEqualTo("CUresult(35)"); // 35 is CUDA runtime's insufficient-driver code, not a CUresult
        assertThat(CudaResult.tableName(100)).isEqualTo("CUDA_ERROR_NO_DEVICE");
        assertThat(CudaResult.tableName(200)).isEqualTo("CUDA_ERROR_INVALID_IMAGE");
        assertThat(CudaResult.tableName(218)).isEqualTo("CUDA_ERROR_INVALID_PTX");
        assertThat(CudaResult.tableName(222)).isEqualTo("CUDA_ERROR_UNSUPPORTED_PTX_VERSION");
        assertThat(CudaResult.tableName(400)).isEqualTo("CUDA_ERROR_INVALID_HANDLE");
        assertThat(CudaResult.tableName(500)).isEqualTo("CUDA_ERROR_NOT_FOUND");
        assertThat(CudaResult.tableName(600)).isEqualTo("CUDA_ERROR_NOT_READY");
        assertThat(CudaResult.tableName(700)).isEqualTo("CUDA_ERROR_ILLEGAL_ADDRESS");
        assertThat(CudaResult.tableName(701)).isEqualTo("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
        assertThat(CudaResult.tableName(719)).isEqualTo("CUDA_ERROR_LAUNCH_FAILED");
        assertThat(CudaResult.tableName(999)).isEqualTo("CUDA_ERROR_UNKNOWN");
        assertThat(CudaResult.tableName(12345)).isEqualTo("CUresult(12345)");
    }

    @Test
    void exceptionCarriesTheCodeAndName() {
        assumeFalse(cuda_h.LIBRARY.isLoaded(), "driver present: names come from cuGetErrorName instead");
        CudaException e = new CudaException("cuMemAlloc_v2", 2);
        assertThat(e.result()).isEqualTo(2);
        assertThat(e.resultName()).isEqualTo("CUDA_ERROR_OUT_OF_MEMORY");
        assertThat(e).hasMessage("cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY");
        CudaException.check(0, "fine"); // no throw
    }
}
