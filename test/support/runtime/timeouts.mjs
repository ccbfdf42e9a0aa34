/** How long a test or hook may take unless it says otherwise (jest's `testTimeout`). */
export const TEST_TIMEOUT_MS = 60_000;
