// The browser test's host page (not shipped): host/dist.
const path = require('path');

module.exports = {
  mode: 'production',
  context: __dirname,
  entry: { host: './index.tsx' },
  output: { path: path.resolve(__dirname, 'dist'), filename: '[name].js', clean: true },
  resolve: { extensions: ['.ts', '.tsx', '.js'] },
  module: {
    rules: [
      {
        test: /\.tsx?$/,
        exclude: /node_modules/,
        use: [{ loader: 'ts-loader', options: { configFile: path.resolve(__dirname, '..', 'tsconfig.json') } }],
      },
    ],
  },
  devtool: false,
  performance: { hints: false },
  plugins: [
    {
      apply: (compiler) =>
        compiler.hooks.thisCompilation.tap('CopyIndex', (compilation) => {
          const fs = require('fs');
          compilation.hooks.processAssets.tap({ name: 'CopyIndex', stage: 0 }, () => {
            const html = fs.readFileSync(path.resolve(__dirname, 'index.html'));
            compilation.emitAsset('index.html', new compiler.webpack.sources.RawSource(html));
          });
        }),
    },
  ],
};
