// The plugin's build: a module-federation container and
// plugin-manifest.json (the SDK's ConsoleRemotePlugin), into dist/. The
// console provides React, the SDK and PatternFly's styles at run time.
const path = require('path');
const { ConsoleRemotePlugin } = require('@openshift-console/dynamic-plugin-sdk-webpack');

module.exports = {
  mode: 'production',
  context: __dirname,
  entry: {},
  output: {
    path: path.resolve(__dirname, 'dist'),
    filename: '[name]-bundle-[contenthash].min.js',
    chunkFilename: '[name]-chunk-[chunkhash].min.js',
    clean: true,
  },
  resolve: { extensions: ['.ts', '.tsx', '.js', '.jsx'] },
  module: {
    rules: [
      {
        test: /\.tsx?$/,
        exclude: /node_modules/,
        use: [{ loader: 'ts-loader', options: { configFile: path.resolve(__dirname, 'tsconfig.json') } }],
      },
    ],
  },
  plugins: [new ConsoleRemotePlugin()],
  devtool: false,
  optimization: { chunkIds: 'named', minimize: true },
  performance: { hints: false },
};
