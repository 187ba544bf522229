// The console's pages, in navigation order. Add a page: write
// pages/<name>.js exporting default {id, title, visible, render} and add
// one import and one entry here (PAGES.md).
import home from './home.js';
import keys from './keys.js';
import spend from './spend.js';
import models from './models.js';

export default [home, keys, spend, models];
