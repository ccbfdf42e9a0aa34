// How TypeScript becomes JavaScript here, in one place: the build (scripts/build.mjs, into
// dist/lib/) and the tests' module hook (test/support/runtime/ts-hooks.mjs, src/ and test/ as they
// load) compile with these swc options, so the tests run the same output the programs are built from.
// Types only stripped (checked by `npm run typecheck`); decorators as TypeScript's
// experimentalDecorators with the metadata Nest injects by; class names kept (Nest and TypeORM
// read them).
export const SWC_OPTIONS = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
    keepClassNames: true,
  },
  module: { type: 'es6' },
};
